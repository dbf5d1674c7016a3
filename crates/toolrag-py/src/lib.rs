//! `toolrag._native`: the Python extension under the `toolrag` package.
//!
//! The Python package (`python/toolrag`) is the API users see; this module is
//! what it calls: the index (`index::Index`, `hit::Hit`), the lint and the
//! gate (`checks`), the plan model in the loop (`plan`), and the whole
//! command line (`toolrag_cli::run_cli`), so the wheel's `toolrag` console
//! script is the Rust program itself.
//!
//! Tools going in, candidate sets, lint findings and build reports cross the
//! boundary as Python objects (dicts and lists, `convert`), not JSON text;
//! whole definitions coming out (`Index.get`, iteration, `Hit.tool`) and the
//! gate's plans and verdicts still go as JSON text, which measured as fast or
//! faster for them. Every call
//! that embeds, builds or searches releases the GIL.

mod cancel;
mod checks;
mod convert;
mod errors;
mod hit;
mod index;
mod model;
mod plan;

use pyo3::prelude::*;

/// The extension allocates with mimalloc, as the binary does (a BM25 query
/// builds and drops about a hundred term scorers: BENCHMARKS.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs the `toolrag` command line on `argv` (`argv[0]` is the program name)
/// and returns its exit status. The GIL is released while it runs.
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| toolrag_cli::run_cli(argv))
}

/// The version of the extension (the workspace version).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_cli, m)?)?;
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(checks::lint, m)?)?;
    m.add_function(wrap_pyfunction!(checks::gate, m)?)?;
    m.add_function(wrap_pyfunction!(model::default_model_name, m)?)?;
    m.add_class::<index::Index>()?;
    m.add_class::<hit::Hit>()?;
    Ok(())
}
