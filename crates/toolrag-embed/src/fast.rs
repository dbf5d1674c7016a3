//! The fastembed implementation of [`Embedder`], with ONNX Runtime loaded
//! dynamically.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use fastembed::{
    InitOptionsUserDefined, OutputKey, Pooling, TextEmbedding, TokenizerFiles,
    UserDefinedEmbeddingModel,
};

use super::model_dir::{ModelDir, ModelSettings, Pooling as PoolingChoice};
use super::Embedder;
use toolrag_core::error::{Error, Result};
use toolrag_core::registry::cut_chars;

// Queries longer than the search's cap are cut before tokenising: the model
// sees at most `max_tokens` anyway, and tokenising megabytes is wasted time.
use toolrag_core::MAX_QUERY_CHARS;

/// How the embedder runs.
#[derive(Debug, Clone)]
pub struct EmbedOptions {
    /// ONNX Runtime intra-op threads per session.
    pub threads: usize,
    /// How many sessions to keep, so that concurrent queries do not queue on one.
    pub sessions: usize,
    /// Texts are truncated to this many tokens (the model was trained on 256).
    pub max_tokens: usize,
    /// Documents are embedded this many at a time. On this int8 model one at
    /// a time is fastest and smallest: on 1,000 synthetic tools with two
    /// sessions, batch 1 took 14 s and 0.49 GB peak RSS, batch 4 17–19 s and
    /// 0.70 GB, batch 16 26 s and 1.5 GB, batch 32 41 s and 2.3 GB
    /// (BENCHMARKS.md, "Index build"). A batch pads every text to its longest,
    /// and ONNX Runtime keeps the memory of the largest shape it has seen.
    pub batch_size: usize,
}

impl Default for EmbedOptions {
    fn default() -> Self {
        EmbedOptions {
            threads: 1,
            sessions: 1,
            max_tokens: 256,
            batch_size: 1,
        }
    }
}

/// A fastembed model over a local ONNX file, L2-normalised, pooled and
/// prefixed as its [`ModelSettings`] say.
pub struct FastEmbedder {
    sessions: Vec<Mutex<TextEmbedding>>,
    /// The model's tokenizer, configured as fastembed configures its own (same
    /// truncation, no padding for one text), for token offsets.
    tokenizer: tokenizers::Tokenizer,
    batch_size: usize,
    max_tokens: usize,
    dimension: usize,
    model_sha256: String,
    settings: ModelSettings,
    /// The weights' sha256, extended with the settings when they are not
    /// plain (see [`ModelSettings::is_plain`]).
    fingerprint: String,
    /// The model folder, absolute.
    source_dir: std::path::PathBuf,
}

impl std::fmt::Debug for FastEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FastEmbedder")
            .field("sessions", &self.sessions.len())
            .field("dimension", &self.dimension)
            .finish()
    }
}

/// The ONNX Runtime library loaded into this process, once loading succeeded.
static ORT: Mutex<Option<PathBuf>> = Mutex::new(None);

/// Loads the ONNX Runtime library once per process. Loading it ourselves, rather
/// than leaving it to `ort`, turns a missing library into an error, not a panic.
/// A failure is not remembered, so a later call with a good folder still works.
fn init_ort(dir: &ModelDir) -> Result<()> {
    let mut loaded = ORT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if loaded.is_some() {
        return Ok(());
    }
    let corrupt = |message: String| Error::ModelCorrupt {
        dir: dir.path().to_path_buf(),
        message,
    };
    let lib = dir.ort_library().ok_or_else(|| {
        corrupt(
            "no ONNX Runtime library: none in the model folder, its parent, $TOOLRAG_MODEL_DIR \
             or ./models; put libonnxruntime.so.* in the model folder, or set ORT_DYLIB_PATH"
                .to_string(),
        )
    })?;
    let builder = ort::init_from(&lib).map_err(|e| {
        corrupt(format!(
            "cannot load ONNX Runtime from {}: {e}",
            lib.display()
        ))
    })?;
    // The default environment is enough; sessions create it on demand.
    drop(builder);
    tracing::debug!(target: "embed", lib = %lib.display(), "loaded ONNX Runtime");
    *loaded = Some(lib);
    Ok(())
}

fn read(dir: &Path, name: &str) -> Result<Vec<u8>> {
    let p = dir.join(name);
    std::fs::read(&p).map_err(|e| Error::io(p, e))
}

impl FastEmbedder {
    /// Loads the model from `dir`.
    pub fn load(dir: &ModelDir, opts: &EmbedOptions) -> Result<FastEmbedder> {
        init_ort(dir)?;
        let onnx = read(dir.path(), "model.onnx")?;
        let tokenizer_files = TokenizerFiles {
            tokenizer_file: read(dir.path(), "tokenizer.json")?,
            config_file: read(dir.path(), "config.json")?,
            special_tokens_map_file: read(dir.path(), "special_tokens_map.json")?,
            tokenizer_config_file: read(dir.path(), "tokenizer_config.json")?,
        };
        let corrupt = |e: fastembed::Error| Error::ModelCorrupt {
            dir: dir.path().to_path_buf(),
            message: e.to_string(),
        };
        let mut sessions = Vec::new();
        for _ in 0..opts.sessions.max(1) {
            let pooling = match dir.settings().pooling {
                PoolingChoice::Mean => Pooling::Mean,
                PoolingChoice::Cls => Pooling::Cls,
            };
            let model = UserDefinedEmbeddingModel::new(onnx.clone(), tokenizer_files.clone())
                .with_pooling(pooling);
            let init = InitOptionsUserDefined::new()
                .with_max_length(opts.max_tokens)
                .with_intra_threads(opts.threads.max(1));
            let te = TextEmbedding::try_new_from_user_defined(model, init).map_err(corrupt)?;
            sessions.push(Mutex::new(te));
        }
        let mut tokenizer = tokenizers::Tokenizer::from_bytes(&tokenizer_files.tokenizer_file)
            .map_err(|e| Error::ModelCorrupt {
                dir: dir.path().to_path_buf(),
                message: format!("tokenizer.json: {e}"),
            })?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(Some(tokenizers::TruncationParams {
                max_length: opts.max_tokens,
                ..Default::default()
            }))
            .map_err(|e| Error::ModelCorrupt {
                dir: dir.path().to_path_buf(),
                message: format!("tokenizer.json: {e}"),
            })?;
        let settings = dir.settings().clone();
        let model_sha256 = dir.model_sha256()?;
        let fingerprint = if settings.is_plain() {
            model_sha256.clone()
        } else {
            let extra = format!(
                "{:?}\0{}\0{}",
                settings.pooling, settings.query_prefix, settings.document_prefix
            );
            use sha2::{Digest, Sha256};
            let h = hex::encode(Sha256::digest(extra.as_bytes()));
            format!("{model_sha256}+{}", &h[..12])
        };
        let mut me = FastEmbedder {
            sessions,
            tokenizer,
            batch_size: opts.batch_size.max(1),
            max_tokens: opts.max_tokens,
            dimension: 0,
            model_sha256,
            settings,
            fingerprint,
            source_dir: std::path::absolute(dir.path())
                .unwrap_or_else(|_| dir.path().to_path_buf()),
        };
        // Probe once: proves the model runs and tells the dimension.
        me.dimension = me.embed_query("probe")?.len();
        Ok(me)
    }

    /// Runs every session once on a text of the full window, so that ONNX
    /// Runtime's memory arena reaches its high-water mark now rather than
    /// creeping up under load as longer requests arrive (a server's RSS would
    /// otherwise grow for minutes and look like a leak). For long-running
    /// processes; a one-shot command would only pay for it at start-up.
    pub fn warm_up(&self) -> Result<()> {
        let longest = "word ".repeat(self.max_tokens);
        for s in &self.sessions {
            let mut s = s.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            s.embed([longest.as_str()], Some(1))
                .map_err(|e| Error::Embed(e.to_string()))?;
        }
        Ok(())
    }

    /// The sha256 of the model file.
    pub fn model_sha256(&self) -> &str {
        &self.model_sha256
    }

    /// The settings (id, pooling, prefixes) the model runs with.
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// `text` with the query prefix before it (borrowed when there is none).
    fn as_query<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        if self.settings.query_prefix.is_empty() {
            std::borrow::Cow::Borrowed(text)
        } else {
            std::borrow::Cow::Owned(format!("{}{text}", self.settings.query_prefix))
        }
    }

    fn with_session<T>(&self, f: impl FnOnce(&mut TextEmbedding) -> Result<T>) -> Result<T> {
        // Take a free session if there is one; otherwise wait on the first.
        for s in &self.sessions {
            if let Ok(mut g) = s.try_lock() {
                return f(&mut g);
            }
        }
        let mut g = self.sessions[0]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&mut g)
    }
}

fn normalize(mut v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if n > 0.0 {
        v.iter_mut().for_each(|x| *x /= n);
    }
    v
}

impl Embedder for FastEmbedder {
    fn model_id(&self) -> &str {
        &self.settings.id
    }

    fn dimension(&self) -> usize {
        self.dimension
    }

    fn source_dir(&self) -> Option<&std::path::Path> {
        Some(&self.source_dir)
    }

    fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let text = self.as_query(cut_chars(text, MAX_QUERY_CHARS));
        let mut out = self.with_session(|s| {
            s.embed([text.as_ref()], Some(1))
                .map_err(|e| Error::Embed(e.to_string()))
        })?;
        out.pop()
            .ok_or_else(|| Error::Embed("the model returned no vector".into()))
    }

    fn embed_query_parts(&self, text: &str, spans: &[(usize, usize)]) -> Result<Vec<Vec<f32>>> {
        let text = cut_chars(text, MAX_QUERY_CHARS);
        if spans.is_empty() {
            return Ok(vec![self.embed_query(text)?]);
        }
        if self.settings.pooling != PoolingChoice::Mean {
            // Parts are pooled from one pass by their tokens' mean; a model
            // pooled otherwise embeds each part on its own.
            return super::embed_parts_one_by_one(self, text, spans);
        }
        let original = (text, spans);
        // Spans are into `text`; the model sees the prefix before it.
        let shift = self.settings.query_prefix.len();
        let spans: Vec<(usize, usize)> =
            spans.iter().map(|&(a, b)| (a + shift, b + shift)).collect();
        let prefixed = self.as_query(text);
        let text = prefixed.as_ref();
        let enc = self
            .tokenizer
            .encode(text, true)
            .map_err(|e| Error::Embed(e.to_string()))?;
        let offsets = enc.get_offsets();
        let out = self.with_session(|s| {
            s.transform([text], Some(1))
                .map_err(|e| Error::Embed(e.to_string()))
        })?;
        let batches = out.into_raw();
        let batch = batches
            .first()
            .ok_or_else(|| Error::Embed("the model returned nothing".into()))?;
        let keys: &[OutputKey] = &[
            OutputKey::ByName("last_hidden_state"),
            OutputKey::ByOrder(0),
        ];
        let hidden = batch
            .select_output(&keys)
            .map_err(|e| Error::Embed(e.to_string()))?;
        let shape = hidden.shape().to_vec();
        if shape.len() != 3 || shape[1] != offsets.len() {
            // The tokenizations disagree; fall back to embedding each part.
            tracing::debug!(target: "embed", ?shape, tokens = offsets.len(), "token offsets do not match the model output");
            return super::embed_parts_one_by_one(self, original.0, original.1);
        }
        let dim = shape[2];
        let flat: Vec<f32> = hidden.iter().copied().collect();
        let pool = |tokens: &mut dyn Iterator<Item = usize>| -> Option<Vec<f32>> {
            let mut acc = vec![0f32; dim];
            let mut n = 0usize;
            for t in tokens {
                for (a, x) in acc.iter_mut().zip(&flat[t * dim..(t + 1) * dim]) {
                    *a += x;
                }
                n += 1;
            }
            (n > 0).then(|| normalize(acc))
        };
        let mut vectors =
            vec![pool(&mut (0..offsets.len())).ok_or_else(|| Error::Embed("no tokens".into()))?];
        for &(a, b) in &spans {
            // Tokens whose text lies inside the span ([CLS]/[SEP] have empty offsets).
            let mut inside = offsets
                .iter()
                .enumerate()
                .filter(|(_, &(s, e))| e > s && s >= a && e <= b)
                .map(|(i, _)| i);
            if let Some(v) = pool(&mut inside) {
                vectors.push(v);
            }
        }
        Ok(vectors)
    }

    fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        // Batches pad to their longest text: sorting by length wastes less.
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let prefix = &self.settings.document_prefix;
        let sorted: Vec<String> = order
            .iter()
            .map(|&i| format!("{prefix}{}", cut_chars(&texts[i], MAX_QUERY_CHARS * 2)))
            .collect();
        let vecs = self.with_session(|s| {
            s.embed(&sorted, Some(self.batch_size))
                .map_err(|e| Error::Embed(e.to_string()))
        })?;
        let mut out = vec![Vec::new(); texts.len()];
        for (v, &i) in vecs.into_iter().zip(&order) {
            out[i] = v;
        }
        Ok(out)
    }
}

/// Counts tokens with the model's tokenizer, without truncation or padding.
pub struct TokenCounter {
    tokenizer: tokenizers::Tokenizer,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCounter")
    }
}

impl TokenCounter {
    /// Loads `tokenizer.json` from the model folder.
    pub fn load(dir: &ModelDir) -> Result<TokenCounter> {
        let path = dir.path().join("tokenizer.json");
        let mut tokenizer =
            tokenizers::Tokenizer::from_file(&path).map_err(|e| Error::ModelCorrupt {
                dir: dir.path().to_path_buf(),
                message: format!("tokenizer.json: {e}"),
            })?;
        tokenizer.with_padding(None);
        tokenizer
            .with_truncation(None)
            .map_err(|e| Error::ModelCorrupt {
                dir: dir.path().to_path_buf(),
                message: format!("tokenizer.json: {e}"),
            })?;
        Ok(TokenCounter { tokenizer })
    }

    /// The number of tokens in `text`, special tokens included.
    pub fn count(&self, text: &str) -> usize {
        self.tokenizer
            .encode(text, true)
            .map(|e| e.len())
            .unwrap_or_else(|_| text.split_whitespace().count())
    }
}
