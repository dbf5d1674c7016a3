//! Phase 2 of a build, with the model: embed the texts that the previous
//! generation has no vector for, and write every point's vector.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use toolrag_core::error::{Error, Result};
use toolrag_embed::embed_documents_chunked_until;

use super::reuse::{previous_vectors, Previous};
use super::{BuildModel, BuildOptions, BuildProgress, BuildReport, HeldEmbedder};
use crate::index::dense::{self, Point};
use crate::index::manifest::ModelInfo;
use crate::search::calibration::RequestVectors;

/// What the model left behind: its identity, for the manifest, and the
/// calibration requests embedded as queries.
pub(super) struct Embedded {
    pub(super) info: ModelInfo,
    pub(super) calibration: Arc<Vec<RequestVectors>>,
}

/// Embeds what `previous` lacks (each distinct text once) and writes the
/// vector of every point of `points` to the staged generation, in order.
/// `texts[i]` is the text of `points[i]`; each is moved out when embedded.
/// The model is dropped before the vectors are written, and each vector
/// leaves memory at its text's last use. A cancel (`opts.cancel`) is heard
/// before each chunk of texts and each calibration request.
#[allow(clippy::too_many_arguments)]
pub(super) fn embed_and_write(
    model: BuildModel<'_>,
    previous: &Previous,
    points: &[Point],
    mut texts: Vec<String>,
    staging: &Path,
    report: &mut BuildReport,
    progress: &(dyn Fn(BuildProgress) + Sync),
    opts: &BuildOptions,
) -> Result<Embedded> {
    let go_on = || opts.go_on();
    let embedder = match model {
        BuildModel::Loaded(e) => HeldEmbedder::Borrowed(e),
        BuildModel::Deferred(load) => HeldEmbedder::Owned(load()?),
    };
    let info = ModelInfo::of(embedder.get());
    let wanted: HashSet<[u8; 16]> = points.iter().map(|p| p.text_hash).collect();
    let mut cache = previous_vectors(previous, &info, &wanted);
    drop(wanted);
    let mut todo: Vec<(usize, [u8; 16])> = Vec::new();
    let mut queued = HashSet::new();
    for (i, p) in points.iter().enumerate() {
        if !cache.contains_key(&p.text_hash) && queued.insert(p.text_hash) {
            todo.push((i, p.text_hash));
        }
    }
    report.embedded_texts = todo.len();
    report.reused_texts = points.len()
        - points
            .iter()
            .filter(|p| queued.contains(&p.text_hash))
            .count();
    drop(queued);
    progress(BuildProgress::EmbedStart { total: todo.len() });
    let t_embed = Instant::now();
    let missing: Vec<String> = todo
        .iter()
        .map(|(i, _)| std::mem::take(&mut texts[*i]))
        .collect();
    drop(texts);
    let vectors = embed_documents_chunked_until(
        embedder.get(),
        &missing,
        &|done| progress(BuildProgress::Embedded { done }),
        &go_on,
    )?;
    drop(missing);
    cache.extend(todo.iter().map(|(_, h)| *h).zip(vectors));
    // The calibration requests of every language, embedded as queries (a
    // few seconds; nothing when this process embedded them with the same
    // model before).
    let calibration = crate::search::calibration::embed_requests_until(embedder.get(), &go_on)?;
    report.embed_seconds = t_embed.elapsed().as_secs_f64();
    progress(BuildProgress::EmbedDone);
    drop(embedder);
    write_vectors(staging, &info, points, cache)?;
    Ok(Embedded { info, calibration })
}

/// Writes `points`' vectors from `cache`, removing each at its last use so
/// that memory shrinks as the file grows.
fn write_vectors(
    staging: &Path,
    info: &ModelInfo,
    points: &[Point],
    mut cache: HashMap<[u8; 16], Vec<f32>>,
) -> Result<()> {
    let mut uses: HashMap<[u8; 16], usize> = HashMap::with_capacity(cache.len());
    for p in points {
        *uses.entry(p.text_hash).or_default() += 1;
    }
    let mut writer =
        dense::VectorWriter::create(&staging.join(dense::VECTORS_FILE), info.dimension, points)?;
    for p in points {
        let left = uses.get_mut(&p.text_hash).expect("counted above");
        *left -= 1;
        let v = if *left == 0 {
            cache.remove(&p.text_hash)
        } else {
            cache.get(&p.text_hash).cloned()
        }
        .ok_or_else(|| Error::Embed("a text has no vector".into()))?;
        writer.push(&v)?;
    }
    writer.finish()
}
