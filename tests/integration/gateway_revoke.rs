//! Revoking a static token without a restart: the gateway reads its
//! `--auth-tokens` file again when it changes (replaced by a rename, or by a
//! Kubernetes-style swap of a symlink) and on SIGHUP; a file that is not
//! well formed keeps the tokens in force.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::gw_harness::{eventually, Gw};

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef";
const CAROL: &str = "carol-token-0123456789abcdef";
const DAVE: &str = "dave-token-0123456789abcdef";

/// Writes `text` beside `path` and renames it over `path`, as an operator
/// (or a config tool) replaces a file atomically.
fn replace(path: &Path, text: &str) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

fn status(gw: &Gw, token: &str) -> u16 {
    gw.list(token).status
}

/// Waits (up to 10 s: the file is looked at every second) until `token`
/// gets `want`.
fn becomes(gw: &Gw, token: &str, want: u16, what: &str) {
    eventually(Duration::from_secs(10), what, || status(gw, token) == want);
}

#[test]
fn a_token_taken_out_of_the_file_is_refused_without_a_restart() {
    let mut gw = Gw::start(
        "",
        &format!("alice:{ALICE}\nbob:{BOB}\ncarol:{CAROL}\n"),
        |_| {},
    );
    let tokens = gw.path("tokens");
    for t in [ALICE, BOB, CAROL] {
        assert_eq!(status(&gw, t), 200);
    }

    // Not well formed: the error names the file and line, nothing changes.
    replace(
        &tokens,
        &format!("alice:{ALICE}\nthis is not a token line\n"),
    );
    eventually(Duration::from_secs(10), "the error is logged", || {
        gw.log().contains("tokens:2:")
    });
    for t in [ALICE, BOB, CAROL] {
        assert_eq!(status(&gw, t), 200, "the old tokens stay");
    }

    // Bob's line removed, the file replaced by a rename: his token is
    // refused within seconds; the others still work.
    replace(&tokens, &format!("alice:{ALICE}\ncarol:{CAROL}\n"));
    becomes(&gw, BOB, 401, "bob is refused after his line is removed");
    assert_eq!(status(&gw, ALICE), 200);
    assert_eq!(status(&gw, CAROL), 200);
    assert!(gw.log().contains("token=bob"), "{}", gw.log());

    // On SIGHUP, the file is read again; the process goes on.
    std::fs::write(&tokens, format!("alice:{ALICE}\n")).unwrap();
    hangup(&gw);
    becomes(&gw, CAROL, 401, "carol is refused after SIGHUP");
    assert!(
        gw.wait_exit(Duration::from_millis(200)).is_none(),
        "SIGHUP does not end it"
    );
    assert!(gw.log().contains("SIGHUP"), "{}", gw.log());
    std::fs::remove_file(&tokens).unwrap();
    hangup(&gw);
    eventually(Duration::from_secs(10), "a missing file is logged", || {
        gw.log().matches("stay in force").count() >= 2
    });
    assert_eq!(status(&gw, ALICE), 200, "a missing file keeps the tokens");

    // A Kubernetes Secret: `tokens` -> `..data/tokens`, and `..data` a
    // symlink swapped to a new folder by a rename.
    let dir = gw.dir.path().to_path_buf();
    secret_version(&dir, "v1", &format!("alice:{ALICE}\ndave:{DAVE}\n"));
    swap(&dir, "v1");
    std::os::unix::fs::symlink("..data/tokens", dir.join("tokens.link")).unwrap();
    std::fs::rename(dir.join("tokens.link"), &tokens).unwrap();
    becomes(&gw, DAVE, 200, "dave's token, from the Secret, is accepted");
    secret_version(&dir, "v2", &format!("alice:{ALICE}\n"));
    swap(&dir, "v2");
    becomes(&gw, DAVE, 401, "dave is refused after the Secret's swap");
    assert_eq!(status(&gw, ALICE), 200);
}

fn hangup(gw: &Gw) {
    let ok = Command::new("kill")
        .args(["-HUP", &gw.pid().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

fn secret_version(dir: &Path, name: &str, text: &str) {
    std::fs::create_dir(dir.join(name)).unwrap();
    std::fs::write(dir.join(name).join("tokens"), text).unwrap();
}

/// Points `..data` at `version` by renaming a new symlink over it, as the
/// kubelet does.
fn swap(dir: &Path, version: &str) {
    let tmp = dir.join("..data_tmp");
    std::os::unix::fs::symlink(version, &tmp).unwrap();
    std::fs::rename(&tmp, dir.join("..data")).unwrap();
}
