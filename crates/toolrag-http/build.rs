//! Records the commit the binary is built from, for `toolrag_build_info`
//! (`/metrics`): `TOOLRAG_COMMIT` when set (a build from a tarball can name
//! its commit), else `git rev-parse --short HEAD`, else `unknown`. It never
//! fails the build, and runs again only when HEAD or the branch it names
//! moves.

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=TOOLRAG_COMMIT");
    let commit = std::env::var("TOOLRAG_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(git_commit)
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=TOOLRAG_COMMIT={}", commit.trim());
    watch_head();
}

/// `git rev-parse --short HEAD`, or `None` without git or a repository.
fn git_commit() -> Option<String> {
    let out = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()?;
    let sha = String::from_utf8(out.stdout).ok()?;
    let sha = sha.trim();
    (out.status.success() && !sha.is_empty() && sha.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| sha.to_string())
}

/// Asks cargo to run this again when HEAD moves: `.git/HEAD`, the branch
/// file it names and `packed-refs`, each only if it exists (cargo would
/// rerun on every build for a missing path).
fn watch_head() {
    // The workspace root, two folders above this crate.
    let git = Path::new("../../.git");
    let head = git.join("HEAD");
    let Ok(text) = std::fs::read_to_string(&head) else {
        return;
    };
    println!("cargo:rerun-if-changed={}", head.display());
    let mut watched = vec![git.join("packed-refs")];
    if let Some(name) = text.trim().strip_prefix("ref: ") {
        watched.push(git.join(name));
    }
    for p in watched.into_iter().filter(|p| p.exists()) {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}
