//! What a build reuses from the previous generation: the vectors of texts
//! whose hash has not changed.

use super::*;

/// The hash of everything about a tool that the index uses, not where it was
/// defined: moving a tool in its file, or indexing the same registry by
/// another path (`tools/` or `/abs/tools`, a copied folder), does not make it
/// "changed". Its id and namespace are hashed, so a rename still counts.
pub fn content_hash(tool: &ToolDef) -> String {
    let mut t = tool.clone();
    t.source.location.file = PathBuf::new();
    t.source.location.line = 0;
    t.source.location.column = 0;
    t.source.spans.clear();
    let bytes = serde_json::to_vec(&t).expect("a ToolDef always serialises");
    hex::encode(&Sha256::digest(&bytes)[..16])
}

pub(super) fn text_hash(text: &str) -> [u8; 16] {
    let d = Sha256::digest(text.as_bytes());
    let mut h = [0u8; 16];
    h.copy_from_slice(&d[..16]);
    h
}

/// The texts of one tool to embed: its document, then each example request,
/// then each learnt request.
pub(super) fn tool_texts(tool: &ToolDef) -> Vec<(PointKind, String)> {
    let mut out = vec![(PointKind::Tool, document_text(tool))];
    let examples = tool
        .examples
        .iter()
        .map(|e| (PointKind::Example, &e.request));
    let learnt = tool.learnt.iter().map(|l| (PointKind::Learnt, &l.request));
    for (kind, r) in examples.chain(learnt) {
        let r = r.trim();
        if !r.is_empty() {
            out.push((kind, r.to_string()));
        }
    }
    out
}

/// What the build reads of the live generation's manifest: enough to count
/// new, changed and removed tools, and to tell whether its vectors are reusable.
/// Read leniently: an index of an older format still lends its vectors
/// (`vectors.bin` has its own magic and checks), so upgrading toolrag does not
/// force re-embedding a registry.
#[derive(Default, serde::Deserialize)]
pub(super) struct Previous {
    #[serde(skip)]
    pub(super) generation: Option<PathBuf>,
    #[serde(default)]
    pub(super) model: Option<ModelInfo>,
    #[serde(default)]
    pub(super) tools: Vec<ToolEntry>,
    #[serde(default)]
    pub(super) files: Vec<FileEntry>,
}

pub(super) fn previous_manifest(out: &Path) -> Previous {
    let Ok(gen) = current_generation(out) else {
        return Previous::default();
    };
    let mut prev = std::fs::read(gen.join("manifest.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Previous>(&b).ok())
        .unwrap_or_default();
    prev.generation = Some(gen);
    prev
}

/// The previous generation's vectors of the texts in `wanted`, by text hash,
/// when it used the same model and its files pass their checksums (a damaged
/// generation lends nothing: the build embeds from scratch). Streamed from
/// the file: only the vectors this build needs are kept.
pub(super) fn previous_vectors(
    prev: &Previous,
    model: &ModelInfo,
    wanted: &std::collections::HashSet<[u8; 16]>,
) -> HashMap<[u8; 16], Vec<f32>> {
    let mut cache = HashMap::new();
    let (Some(gen), Some(p)) = (&prev.generation, &prev.model) else {
        return cache;
    };
    if !p.same_model(model) {
        return cache;
    }
    let path = gen.join(dense::VECTORS_FILE);
    let mut read = || -> Result<()> {
        // Only the vectors file's checksum: the manifest may be of an older
        // format (the vectors do not depend on it), which `Manifest::read`
        // would refuse, and a refusal here would re-embed the whole registry.
        let entry = prev
            .files
            .iter()
            .find(|f| f.path == dense::VECTORS_FILE)
            .ok_or_else(|| Error::Index("the manifest lists no vectors file".into()))?;
        entry.verify(gen)?;
        let mut r = dense::VectorReader::open(&path)?;
        let dim = r.dim();
        if dim != model.dimension {
            return Ok(());
        }
        r.for_each_chunk(dense::STREAM_CHUNK, |_, points, vectors| {
            for (p, v) in points.iter().zip(vectors.chunks_exact(dim)) {
                if wanted.contains(&p.text_hash) {
                    cache.insert(p.text_hash, v.to_vec());
                }
            }
            Ok(())
        })
    };
    if let Err(e) = read() {
        tracing::warn!(target: "index", "not reusing vectors: {e}");
        cache.clear();
    }
    cache
}
