//! toolrag's errors as the Python exceptions of `toolrag._errors`.
//!
//! The classes are defined in Python (so they can also be `ValueError`s and
//! `FileNotFoundError`s, and carry attributes); this module picks the class
//! for each [`toolrag::Error`] and hands over the details as keyword data.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use toolrag::Error;

/// The Python exception for `err`.
pub fn to_py(err: Error) -> PyErr {
    Python::attach(|py| build(py, err).unwrap_or_else(|e| e))
}

/// The Python exception for any error of a front end (anyhow), after the
/// [`toolrag::Error`] inside it when there is one.
pub fn message_error(class: &str, message: String) -> PyErr {
    Python::attach(|py| {
        let made = (|| -> PyResult<PyErr> {
            let cls = py.import("toolrag._errors")?.getattr(class)?;
            Ok(PyErr::from_value(cls.call1((message.clone(),))?))
        })();
        made.unwrap_or_else(|_| PyRuntimeError::new_err(message))
    })
}

/// The error with Python's hints: a limit is raised with `limits=`, not
/// the CLI's `--limit`.
fn with_python_hints(err: Error) -> Error {
    match err {
        Error::Load(mut errors) => {
            for e in &mut errors.0 {
                if let Some(name) = e.limit {
                    e.message
                        .push_str(&format!(" (raise it with limits={{\"{name}\": N}})"));
                }
            }
            Error::Load(errors)
        }
        other => other,
    }
}

/// What to do next, in Python's words (the library's errors say what is
/// wrong; the command line gives its own hints).
fn python_hint(err: &Error) -> Option<String> {
    Some(match err {
        Error::NoIndex { path } => format!(
            "Build one with toolrag.Index.build(tools, \"{}\").",
            path.display()
        ),
        Error::IncompatibleIndex { .. } | Error::Corrupt { .. } => {
            "Build it again with toolrag.Index.build(tools, path).".into()
        }
        Error::BuildFailed { .. } => "Build again once this is fixed.".into(),
        Error::ModelNotFound { .. } | Error::ModelCorrupt { .. } => {
            "The wheel carries the model `minilm-tools`: reinstall it (`pip install --force-reinstall toolrag`), \
             or name a folder holding model.onnx and its tokenizer files with model=\"/path/to/model\"."
                .into()
        }
        _ => return None,
    })
}

fn build(py: Python<'_>, err: Error) -> PyResult<PyErr> {
    let err = &with_python_hints(err);
    let details = PyDict::new(py);
    let class = match err {
        Error::Load(errors) => {
            let list = PyList::empty(py);
            for e in &errors.0 {
                let item = PyDict::new(py);
                item.set_item("file", e.location.file.display().to_string())?;
                let line = (e.location.line > 0).then_some(e.location.line);
                item.set_item("line", line)?;
                item.set_item("column", line.map(|_| e.location.column))?;
                item.set_item("message", &e.message)?;
                item.set_item("limit", e.limit)?;
                list.append(item)?;
            }
            details.set_item("errors", list)?;
            "InvalidRegistry"
        }
        Error::Config(_) | Error::InvalidInput(_) => "InvalidInput",
        Error::Corrupt { path, .. } => {
            details.set_item("path", path.display().to_string())?;
            "IndexCorrupted"
        }
        Error::Index(_) | Error::IncompatibleIndex { .. } => "IndexCorrupted",
        Error::NoIndex { path } => {
            details.set_item("path", path.display().to_string())?;
            "IndexNotFound"
        }
        Error::ModelNotFound { .. } | Error::ModelUnavailable { .. } => "ModelMissing",
        Error::Io { path, source } if source.kind() == std::io::ErrorKind::NotFound => {
            details.set_item("path", path.display().to_string())?;
            details.set_item("filename", path.display().to_string())?;
            "FileMissing"
        }
        Error::ModelCorrupt { dir, .. } => {
            details.set_item("path", dir.display().to_string())?;
            "ModelMissing"
        }
        _ => "Error",
    };
    let mut message = err.to_string();
    if let Some(hint) = python_hint(err) {
        message.push_str("\n  ");
        message.push_str(&hint);
    }
    let cls = py.import("toolrag._errors")?.getattr(class)?;
    let value = cls.call((message,), Some(&details))?;
    Ok(PyErr::from_value(value))
}
