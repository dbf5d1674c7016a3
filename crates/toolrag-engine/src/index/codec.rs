//! The header of every binary file toolrag owns in a generation folder.
//!
//! ```text
//! offset  size  field
//!      0     8  magic: which kind of file (FileKind::magic)
//!      8     4  format version of that kind, u32 little-endian
//!     12     4  reserved, 0
//!     16     8  payload length in bytes (what follows the header), u64 LE
//!     24     …  payload
//! ```
//!
//! A wrong magic or version is [`Error::IncompatibleIndex`]: the file is of
//! another kind or another release, and is refused rather than misread. A
//! payload length that disagrees with the file's size is [`Error::Corrupt`].
//! Damage inside the payload is caught by the generation's checksums
//! (`manifest.json`, verified when the generation is opened), not here.
//!
//! `vectors.bin` is written with [`VECTORS`] (see `dense::vectors`) and read
//! as a stream ([`FileKind::read_header`]); `impacts.bin` with [`IMPACTS`]
//! (see `impact`) and read whole ([`FileKind::payload`]).

use std::io::{Read, Write};
use std::path::Path;

use toolrag_core::error::{Error, Result};

/// The header's size in bytes.
pub(crate) const HEADER_LEN: u64 = 24;

/// One kind of file: its magic, its current format version and its name (for
/// messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileKind {
    /// Eight bytes that open every file of this kind.
    pub(crate) magic: [u8; 8],
    /// The format version this build writes and reads.
    pub(crate) version: u32,
    /// What the file is, for messages.
    pub(crate) name: &'static str,
}

/// `vectors.bin`: the point table and the raw vectors.
pub(crate) const VECTORS: FileKind = FileKind {
    magic: *b"TRVECTOR",
    version: 1,
    name: "vectors.bin",
};

/// `impacts.bin`: each term's BM25 impact per tool.
pub(crate) const IMPACTS: FileKind = FileKind {
    magic: *b"TRIMPACT",
    version: 1,
    name: "impacts.bin",
};

impl FileKind {
    /// The header of a file of this kind whose payload is `payload_len` bytes.
    pub(crate) fn header(&self, payload_len: u64) -> [u8; HEADER_LEN as usize] {
        let mut h = [0u8; HEADER_LEN as usize];
        h[..8].copy_from_slice(&self.magic);
        h[8..12].copy_from_slice(&self.version.to_le_bytes());
        h[16..24].copy_from_slice(&payload_len.to_le_bytes());
        h
    }

    /// Writes the header of a file of this kind whose payload is
    /// `payload_len` bytes.
    pub(crate) fn write_header(&self, w: &mut impl Write, payload_len: u64) -> std::io::Result<()> {
        w.write_all(&self.header(payload_len))
    }

    /// Checks the header at the start of `bytes` (the whole of the file at
    /// `path`) and returns the payload.
    pub(crate) fn payload<'a>(&self, path: &Path, bytes: &'a [u8]) -> Result<&'a [u8]> {
        let head = bytes.get(..HEADER_LEN as usize).unwrap_or(bytes);
        let len = self.check(path, head, bytes.len() as u64)?;
        Ok(&bytes[HEADER_LEN as usize..][..len as usize])
    }

    /// Reads and checks the header from `r`, the start of the file at `path`
    /// whose size is `file_len`; returns the payload length.
    pub(crate) fn read_header(&self, path: &Path, r: &mut impl Read, file_len: u64) -> Result<u64> {
        let mut head = [0u8; HEADER_LEN as usize];
        let mut got = 0;
        while got < head.len() {
            match r.read(&mut head[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(path, e)),
            }
        }
        self.check(path, &head[..got], file_len)
    }

    /// Checks a header (`head`, possibly short) against this kind and the
    /// file's size; returns the payload length.
    fn check(&self, path: &Path, head: &[u8], file_len: u64) -> Result<u64> {
        let corrupt = |reason: String| Error::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        if head.len() < 8 || head[..8] != self.magic {
            return Err(Error::IncompatibleIndex {
                path: path.to_path_buf(),
                found: format!("a file that is not a {} of this release", self.name),
                expected: format!("{} format {}", self.name, self.version),
            });
        }
        if head.len() < HEADER_LEN as usize {
            return Err(corrupt("truncated header".into()));
        }
        let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
        if version != self.version {
            return Err(Error::IncompatibleIndex {
                path: path.to_path_buf(),
                found: format!("{} format {version}", self.name),
                expected: format!("{} format {}", self.name, self.version),
            });
        }
        let len = u64::from_le_bytes(head[16..24].try_into().expect("8 bytes"));
        if HEADER_LEN.checked_add(len) != Some(file_len) {
            return Err(corrupt(format!(
                "the header gives a {len}-byte payload, the file holds {}",
                file_len.saturating_sub(HEADER_LEN)
            )));
        }
        Ok(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_refuse_other_kinds_versions_and_lengths() {
        let p = Path::new("x.bin");
        let mut file = VECTORS.header(3).to_vec();
        file.extend_from_slice(b"abc");
        assert_eq!(VECTORS.payload(p, &file).unwrap(), b"abc");
        assert_eq!(VECTORS.read_header(p, &mut &file[..], 27).unwrap(), 3);

        let other = IMPACTS.payload(p, &file).unwrap_err();
        assert!(matches!(other, Error::IncompatibleIndex { .. }), "{other}");
        let mut newer = file.clone();
        newer[8] = 2;
        let e = VECTORS.payload(p, &newer).unwrap_err();
        assert!(matches!(e, Error::IncompatibleIndex { .. }), "{e}");
        assert!(e.to_string().contains("format 2"), "{e}");

        let e = VECTORS.payload(p, &file[..26]).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e}");
        let e = VECTORS.payload(p, &file[..12]).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e}");
        let e = VECTORS.payload(p, b"").unwrap_err();
        assert!(matches!(e, Error::IncompatibleIndex { .. }), "{e}");
    }
}
