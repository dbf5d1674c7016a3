//! Values across the boundary as Python objects, not JSON text: tool
//! definitions come in as the dicts and lists the user holds, and results go
//! out as dicts and lists built here, with no `json.dumps` on one side and
//! `serde_json::from_str` on the other (or `to_string` and `json.loads`).
//!
//! [`to_value`] takes what `json.dumps(..., allow_nan=False)` takes (dict,
//! list, tuple, str, int, float, bool, None and their subclasses; dict keys
//! that are str, int, float, bool or None) and refuses the rest with the
//! same words; [`to_py`] gives back what `json.loads` would.

use std::collections::HashMap;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use serde_json::{Map, Number, Value};

/// How deep a value may nest (serde_json's own limit when it parses text).
const MAX_DEPTH: usize = 128;

/// A Python value as JSON; the error says what is not JSON.
pub fn to_value(obj: &Bound<'_, PyAny>) -> Result<Value, String> {
    at(obj, 0)
}

fn at(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err(format!("nested more than {MAX_DEPTH} deep"));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::String(text(s)?));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(Value::Number(int(obj)?));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return float(f.value()).map(Value::Number);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(d.len());
        for (k, v) in d.iter() {
            map.insert(key(&k)?, at(&v, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l.iter().map(|v| at(&v, depth + 1)).collect();
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t.iter().map(|v| at(&v, depth + 1)).collect();
    }
    Err(format!(
        "Object of type {} is not JSON serializable",
        type_name(obj)
    ))
}

fn text(s: &Bound<'_, PyString>) -> Result<String, String> {
    s.to_str()
        .map(str::to_owned)
        .map_err(|e| format!("a string that is not UTF-8: {e}"))
}

fn int(obj: &Bound<'_, PyAny>) -> Result<Number, String> {
    if let Ok(i) = obj.extract::<i64>() {
        return Ok(i.into());
    }
    if let Ok(u) = obj.extract::<u64>() {
        return Ok(u.into());
    }
    // Beyond 64 bits, as JSON text would be read back: a float.
    let f: f64 = obj.extract().map_err(|e: PyErr| e.to_string())?;
    float(f)
}

fn float(f: f64) -> Result<Number, String> {
    Number::from_f64(f)
        .ok_or_else(|| format!("Out of range float values are not JSON compliant: {f}"))
}

/// A dict key as `json.dumps` writes it.
fn key(k: &Bound<'_, PyAny>) -> Result<String, String> {
    if let Ok(s) = k.cast::<PyString>() {
        return text(s);
    }
    if let Ok(b) = k.cast::<PyBool>() {
        return Ok(if b.is_true() { "true" } else { "false" }.into());
    }
    if k.is_none() {
        return Ok("null".into());
    }
    if k.is_instance_of::<PyInt>() || k.is_instance_of::<PyFloat>() {
        return match at(k, 0)? {
            Value::Number(n) => Ok(n.to_string()),
            _ => unreachable!("a number"),
        };
    }
    Err(format!(
        "keys must be str, int, float, bool or None, not {}",
        type_name(k)
    ))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "?".into(), |n| n.to_string())
}

/// A JSON value as Python objects, as `json.loads` gives them. Like
/// `json.loads`, each distinct key becomes one Python string, shared by
/// every dict that has it (tool definitions repeat `type`, `description`).
pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    let mut keys = HashMap::new();
    build(py, v, &mut keys)
}

fn build<'py, 'v>(
    py: Python<'py>,
    v: &'v Value,
    keys: &mut HashMap<&'v str, Bound<'py, PyString>>,
) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any()
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| build(py, x, keys))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        Value::Object(m) => {
            let dict = PyDict::new(py);
            for (k, x) in m {
                let key = keys
                    .entry(k.as_str())
                    .or_insert_with(|| PyString::new(py, k))
                    .clone();
                dict.set_item(key, build(py, x, keys)?)?;
            }
            dict.into_any()
        }
    })
}

/// A value serialized to JSON text read back as a value: its numbers are
/// then those the text shows (an `f32` as its shortest decimal, as the CLI
/// prints it), which `serde_json::to_value` would widen to `f64` digits.
pub fn through_text(text: serde_json::Result<String>) -> toolrag::Result<Value> {
    text.and_then(|t| serde_json::from_str(&t))
        .map_err(|e| toolrag::Error::Index(format!("cannot serialize: {e}")))
}
