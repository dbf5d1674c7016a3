//! The library's one error type.
//!
//! Errors are split the way a caller needs them: user errors (bad registry files,
//! a missing model, an incompatible index) carry enough context to be printed as
//! they are; internal errors wrap the failing layer.

use std::fmt;
use std::path::PathBuf;

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in toolrag. New variants may be added.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// One or more registry files could not be loaded. Every bad file is listed,
    /// not only the first.
    #[error("{0}")]
    Load(LoadErrors),

    /// A file or folder could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The underlying I/O error.
        source: std::io::Error,
    },

    /// No embedding model was found in any of the searched places.
    #[error(
        "no embedding model found (looked in: {searched}).\n  \
         A model folder holds model.onnx, tokenizer.json, config.json, special_tokens_map.json,\n  \
         tokenizer_config.json and libonnxruntime.so.*; $TOOLRAG_MODEL_DIR names one for every front end."
    )]
    ModelNotFound {
        /// The places that were searched, in order, as a printable list.
        searched: String,
    },

    /// The chosen model is not one this build can load: an unknown name, or
    /// a fastembed model that would need a download.
    #[error("model `{name}`: {message}")]
    ModelUnavailable {
        /// The name that was asked for.
        name: String,
        /// Why it cannot be used, and what to do instead.
        message: String,
    },

    /// A model folder exists but is incomplete or unusable.
    #[error(
        "the embedding model in {} is unusable: {message}",
        dir.display()
    )]
    ModelCorrupt {
        /// The model folder.
        dir: PathBuf,
        /// What is wrong with it.
        message: String,
    },

    /// The embedding model failed while embedding text.
    #[error("embedding failed: {0}")]
    Embed(String),

    /// The index on disk was built by another format version or another model.
    /// It is refused rather than misread.
    #[error(
        "incompatible index in {}: it was built with {found}, but this toolrag needs {expected}; \
         it must be built again",
        path.display()
    )]
    IncompatibleIndex {
        /// The index folder.
        path: PathBuf,
        /// What the index was built with.
        found: String,
        /// What this build of toolrag expects.
        expected: String,
    },

    /// No index was found where one was expected.
    #[error("no index in {}", path.display())]
    NoIndex {
        /// The folder that holds no index.
        path: PathBuf,
    },

    /// Another process is building into the same index folder.
    #[error(
        "another build is writing into {} (the lock {} is held); wait for it to finish",
        path.display(),
        path.join("LOCK").display()
    )]
    Locked {
        /// The index folder.
        path: PathBuf,
    },

    /// Writing a new index generation failed (a full disk, an I/O error).
    /// Nothing was published: the live generation is untouched.
    #[error(
        "the index build failed: {reason}.\n  {}Nothing was published: the live generation in {} \
         is untouched and keeps serving; build again once this is fixed.",
        if *disk_full { "The disk is full: free some space. " } else { "" },
        out.display()
    )]
    BuildFailed {
        /// The index folder.
        out: PathBuf,
        /// What failed.
        reason: String,
        /// Whether the cause is a full disk.
        disk_full: bool,
    },

    /// The index files are damaged or unreadable.
    #[error("the index is damaged: {0}")]
    Index(String),

    /// An index file could not be written because the disk is full: the
    /// index library's own error, told apart by its I/O error's kind.
    #[error("the disk is full: {0}")]
    DiskFull(String),

    /// A file of an index generation is missing, or its size or checksum is
    /// not the one its manifest records, or its content cannot be what toolrag
    /// wrote. The generation is refused rather than misread.
    #[error(
        "the index file {} is damaged: {reason}; the index must be built again",
        path.display()
    )]
    Corrupt {
        /// The damaged file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },

    /// A request to the library was invalid (an empty query, a bad option).
    #[error("{0}")]
    InvalidInput(String),

    /// A configuration (`toolrag.toml`) is invalid: the file, line and key.
    #[error("{0}")]
    Config(ConfigError),

    /// The caller asked the build to stop (`BuildOptions::cancel` in the
    /// engine): nothing was published and the staged generation is removed.
    #[error(
        "the index build was cancelled: nothing was published, and the live generation in {} \
         (if any) is untouched",
        out.display()
    )]
    Cancelled {
        /// The index folder.
        out: PathBuf,
    },
}

/// Who has to act on an [`Error`]: the caller, or whoever runs the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The caller asked for something wrong: a bad registry file or
    /// `toolrag.toml` (with its file and line), an invalid request, a model or
    /// an index that is not there or was made by another version. Fix the
    /// input and try again.
    Caller,
    /// Something broke inside: an I/O failure, a damaged index file (named),
    /// an unusable model folder, a failed build or embedding. The input was
    /// fine.
    Internal,
}

impl Error {
    /// Whether the caller did something wrong or something broke inside.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Load(_)
            | Error::ModelNotFound { .. }
            | Error::ModelUnavailable { .. }
            | Error::IncompatibleIndex { .. }
            | Error::NoIndex { .. }
            | Error::Locked { .. }
            | Error::InvalidInput(_)
            | Error::Config(_)
            | Error::Cancelled { .. } => ErrorKind::Caller,
            Error::Io { .. }
            | Error::ModelCorrupt { .. }
            | Error::Embed(_)
            | Error::BuildFailed { .. }
            | Error::Index(_)
            | Error::DiskFull(_)
            | Error::Corrupt { .. } => ErrorKind::Internal,
        }
    }

    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

/// A position in a source file, 1-based.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub struct Location {
    /// The file.
    pub file: PathBuf,
    /// The line, starting at 1; 0 for a value that has no text (a tool
    /// handed over in memory), which is then shown without line and column.
    pub line: u32,
    /// The column in characters, starting at 1.
    pub column: u32,
}

impl Location {
    /// A location at line and column 1 of `file`, for errors about a whole file.
    pub fn file_start(file: impl Into<PathBuf>) -> Self {
        Location {
            file: file.into(),
            line: 1,
            column: 1,
        }
    }

    /// The location of byte `offset` in `text`, which is the content of `file`.
    pub fn from_offset(file: impl Into<PathBuf>, text: &str, offset: usize) -> Self {
        let offset = offset.min(text.len());
        let mut cut = offset;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        let before = &text[..cut];
        let line = before.matches('\n').count() as u32 + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() as u32 + 1;
        Location {
            file: file.into(),
            line,
            column,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            // A value with no text (a tool handed over in memory): no line.
            return write!(f, "{}", self.file.display());
        }
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)
    }
}

/// One problem found while loading a registry file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadError {
    /// Where the problem is: the file, and the line and column where known.
    pub location: Location,
    /// What is wrong.
    pub message: String,
    /// The limit of [`LoadLimits`](crate::registry::LoadLimits) that was
    /// exceeded, by name (`description-bytes`), when that is the problem: each
    /// front end says how to raise it (the CLI's `--limit`, Python's `limits=`).
    pub limit: Option<&'static str>,
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

/// All the problems found while loading a registry; never empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadErrors(pub Vec<LoadError>);

impl fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.len();
        write!(
            f,
            "the registry has {n} error{}:",
            if n == 1 { "" } else { "s" }
        )?;
        for e in &self.0 {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}

/// What is wrong with a configuration: where (file, line, key) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The file, when the configuration was read from one.
    pub file: Option<PathBuf>,
    /// The line of the key (1-based), where the file shows it.
    pub line: Option<u32>,
    /// The key as a dotted path (`search.fusion.k`, `lint.ignore[0].path`);
    /// `None` for a file that is not TOML at all.
    pub key: Option<String>,
    /// What is wrong, naming the key.
    pub message: String,
}

impl ConfigError {
    /// A problem with `key` (a dotted path), not yet placed in a file.
    pub fn at(key: impl Into<String>, message: impl Into<String>) -> Self {
        ConfigError {
            file: None,
            line: None,
            key: Some(key.into()),
            message: message.into(),
        }
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(file), Some(line)) => write!(f, "{}:{line}: ", file.display())?,
            (Some(file), None) => write!(f, "{}: ", file.display())?,
            (None, Some(line)) => write!(f, "line {line}: ")?,
            (None, None) => {}
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Self {
        Error::Config(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_file_is_the_callers_and_a_damaged_index_is_internal() {
        let bad = Error::Config(ConfigError::at(
            "search.depth",
            "`search.depth` must be from 1",
        ));
        assert_eq!(bad.kind(), ErrorKind::Caller);
        let damaged = Error::Corrupt {
            path: "index/gen-000001/vectors.bin".into(),
            reason: "its checksum is not the manifest's".into(),
        };
        assert_eq!(damaged.kind(), ErrorKind::Internal);
        assert!(damaged.to_string().contains("index/gen-000001/vectors.bin"));
    }

    #[test]
    fn offsets_become_lines_and_columns() {
        let text = "a = 1\nbé = 2\n";
        let loc = Location::from_offset("f.toml", text, text.find('=').unwrap());
        assert_eq!((loc.line, loc.column), (1, 3));
        let loc = Location::from_offset("f.toml", text, text.rfind('=').unwrap());
        assert_eq!((loc.line, loc.column), (2, 4));
    }
}
