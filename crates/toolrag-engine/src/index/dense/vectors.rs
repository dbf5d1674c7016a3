//! The `vectors.bin` codec: a [`codec::VECTORS`] header, then the point
//! table and every point's vector, streamed in both directions so that
//! neither a build nor a reader of a large index holds more than a chunk.
//!
//! ```text
//! header   24 bytes (codec), payload length = all that follows
//! dim      u32 LE
//! n        u32 LE
//! points   n × 21 bytes: tool u32 LE, kind u8, text hash [u8; 16]
//! vectors  n × dim × f32 LE, in point order
//! ```

use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;

use super::{Point, PointKind};
use crate::index::codec::{self, HEADER_LEN};
use toolrag_core::error::{Error, Result};

/// The file's name in a generation folder.
pub(crate) const FILE: &str = "vectors.bin";

/// Bytes of one point-table record.
const POINT_RECORD: usize = 21;

/// The payload length of a file of `n` points of `dim` dimensions.
fn payload_len(dim: usize, n: usize) -> Option<u64> {
    let table = n.checked_mul(POINT_RECORD)?;
    let vectors = n.checked_mul(dim)?.checked_mul(4)?;
    let total = 8usize.checked_add(table)?.checked_add(vectors)?;
    u64::try_from(total).ok()
}
/// Writes `vectors.bin` one vector at a time, so that a build never holds a
/// flat copy of every vector: the header and point table first, then each
/// point's vector in point order.
pub(crate) struct VectorWriter {
    w: BufWriter<std::fs::File>,
    path: std::path::PathBuf,
    dim: usize,
    left: usize,
}

impl VectorWriter {
    /// Creates `path` and writes the header and the point map.
    pub(crate) fn create(path: &Path, dim: usize, points: &[Point]) -> Result<VectorWriter> {
        let file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
        let mut w = BufWriter::new(file);
        let io = |e| Error::io(path, e);
        let len = payload_len(dim, points.len())
            .ok_or_else(|| Error::Index("too many vectors for one file".into()))?;
        codec::VECTORS.write_header(&mut w, len).map_err(io)?;
        w.write_all(&(dim as u32).to_le_bytes()).map_err(io)?;
        w.write_all(&(points.len() as u32).to_le_bytes())
            .map_err(io)?;
        for p in points {
            w.write_all(&p.tool.to_le_bytes()).map_err(io)?;
            w.write_all(&[p.kind as u8]).map_err(io)?;
            w.write_all(&p.text_hash).map_err(io)?;
        }
        Ok(VectorWriter {
            w,
            path: path.to_path_buf(),
            dim,
            left: points.len(),
        })
    }

    /// Appends the next point's vector.
    pub(crate) fn push(&mut self, v: &[f32]) -> Result<()> {
        if v.len() != self.dim {
            return Err(Error::Embed(format!(
                "the model gave {} dimensions, not {}",
                v.len(),
                self.dim
            )));
        }
        if self.left == 0 {
            return Err(Error::Index("more vectors than points".into()));
        }
        self.left -= 1;
        for x in v {
            self.w
                .write_all(&x.to_le_bytes())
                .map_err(|e| Error::io(&self.path, e))?;
        }
        Ok(())
    }

    /// Flushes and syncs the file; every point must have its vector.
    pub(crate) fn finish(self) -> Result<()> {
        if self.left != 0 {
            return Err(Error::Index(format!("{} points have no vector", self.left)));
        }
        let path = self.path;
        let file = self
            .w
            .into_inner()
            .map_err(|e| Error::io(&path, e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&path, e))
    }
}

/// An open `vectors.bin` whose header and point table have been read; the
/// vectors follow, in point order.
pub(crate) struct VectorReader {
    r: BufReader<std::fs::File>,
    path: std::path::PathBuf,
    dim: usize,
    points: Vec<Point>,
    /// Vectors not read yet.
    left: usize,
}

impl VectorReader {
    /// Opens `path` and reads its header and point table.
    pub(crate) fn open(path: &Path) -> Result<VectorReader> {
        let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let len = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let mut r = BufReader::new(file);
        let bad = |what: &str| Error::Corrupt {
            path: path.to_path_buf(),
            reason: what.to_string(),
        };
        codec::VECTORS.read_header(path, &mut r, len)?;
        let mut u = [0u8; 4];
        r.read_exact(&mut u).map_err(|_| bad("truncated header"))?;
        let dim = u32::from_le_bytes(u) as usize;
        r.read_exact(&mut u).map_err(|_| bad("truncated header"))?;
        let n = u32::from_le_bytes(u) as usize;
        if payload_len(dim, n).map(|p| p + HEADER_LEN) != Some(len) {
            return Err(bad("vector data has the wrong length"));
        }
        let mut points = Vec::with_capacity(n);
        let mut rec = [0u8; POINT_RECORD];
        for _ in 0..n {
            r.read_exact(&mut rec)
                .map_err(|_| bad("truncated point table"))?;
            let kind = match rec[4] {
                0 => PointKind::Tool,
                1 => PointKind::Example,
                2 => PointKind::Learnt,
                _ => return Err(bad("unknown point kind")),
            };
            let mut text_hash = [0u8; 16];
            text_hash.copy_from_slice(&rec[5..21]);
            points.push(Point {
                tool: u32::from_le_bytes(rec[..4].try_into().expect("4 bytes")),
                kind,
                text_hash,
            });
        }
        Ok(VectorReader {
            r,
            path: path.to_path_buf(),
            dim,
            points,
            left: n,
        })
    }

    /// The vector dimension.
    pub(crate) fn dim(&self) -> usize {
        self.dim
    }

    /// The point map, in point order.
    pub(crate) fn points(&self) -> &[Point] {
        &self.points
    }

    /// Calls `f(first_point, points, vectors)` for consecutive chunks of at
    /// most `chunk_points` of the vectors not read yet (row-major, `dim`
    /// wide), with the points they belong to, so a large file is never held
    /// whole.
    pub(crate) fn for_each_chunk(
        &mut self,
        chunk_points: usize,
        mut f: impl FnMut(usize, &[Point], &[f32]) -> Result<()>,
    ) -> Result<()> {
        let mut chunk = Vec::new();
        let mut first = self.points.len() - self.left;
        while self.left > 0 {
            self.next_chunk(chunk_points.max(1), &mut chunk)?;
            let n = chunk.len() / self.dim.max(1);
            f(first, &self.points[first..first + n], &chunk)?;
            first += n;
        }
        Ok(())
    }

    /// Reads the next `max_points` vectors (fewer at the end; none when done),
    /// row-major, into `out` (cleared first).
    pub(super) fn next_chunk(&mut self, max_points: usize, out: &mut Vec<f32>) -> Result<()> {
        out.clear();
        let take = max_points.min(self.left);
        let mut bytes = vec![0u8; take * self.dim * 4];
        self.r
            .read_exact(&mut bytes)
            .map_err(|e| Error::io(&self.path, e))?;
        out.extend(
            bytes
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))),
        );
        self.left -= take;
        Ok(())
    }
}

/// Vectors read (and graph points inserted) per step when streaming
/// `vectors.bin`: 4,096 × 384 floats is 6 MiB.
pub(crate) const STREAM_CHUNK: usize = 4096;

/// Reads `vectors.bin`: its header and point table, and the raw vectors only
/// when there are at most `vectors_up_to` points (a searcher of a large index
/// needs the map, not the vectors the graph holds).
pub(super) fn read_vector_file(
    path: &Path,
    vectors_up_to: usize,
) -> Result<(usize, Vec<Point>, Option<Vec<f32>>)> {
    let mut r = VectorReader::open(path)?;
    if r.points.len() > vectors_up_to {
        return Ok((r.dim, r.points, None));
    }
    let mut vectors = Vec::new();
    r.next_chunk(r.left, &mut vectors)?;
    Ok((r.dim, r.points, Some(vectors)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_stream_back_in_chunks_and_the_writer_checks_counts() {
        let (n, dim) = (10, 4);
        let v = super::super::test_vectors(n, dim);
        let points: Vec<Point> = (0..n)
            .map(|i| Point {
                tool: i as u32,
                kind: PointKind::Example,
                text_hash: [i as u8; 16],
            })
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.bin");
        let mut w = VectorWriter::create(&path, dim, &points).unwrap();
        assert!(w.push(&[0.0; 3]).is_err(), "a vector of the wrong width");
        for x in v.chunks_exact(dim) {
            w.push(x).unwrap();
        }
        assert!(w.push(&v[..dim]).is_err(), "one vector too many");
        w.finish().unwrap();

        let mut r = VectorReader::open(&path).unwrap();
        assert_eq!((r.dim(), r.points()), (dim, &points[..]));
        let mut seen = Vec::new();
        let mut seen_points = Vec::new();
        let mut firsts = Vec::new();
        r.for_each_chunk(3, |first, pts, chunk| {
            firsts.push(first);
            seen_points.extend_from_slice(pts);
            seen.extend_from_slice(chunk);
            Ok(())
        })
        .unwrap();
        assert_eq!(firsts, [0, 3, 6, 9]);
        assert_eq!(seen_points, points);
        assert_eq!(seen, v);

        let short = VectorWriter::create(&dir.path().join("short.bin"), dim, &points).unwrap();
        assert!(short.finish().is_err(), "points without vectors");
        std::fs::write(&path, b"TRVEC001").unwrap();
        let old = read_vector_file(&path, usize::MAX).unwrap_err();
        assert!(matches!(old, Error::IncompatibleIndex { .. }), "{old}");
        // A header whose length disagrees with the file.
        let mut bytes = std::fs::read(dir.path().join("short.bin")).unwrap();
        bytes.truncate(30);
        std::fs::write(&path, &bytes).unwrap();
        let short = read_vector_file(&path, usize::MAX).unwrap_err();
        assert!(matches!(short, Error::Corrupt { .. }), "{short}");
    }
}
