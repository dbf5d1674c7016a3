//! `[gateway] state = "rediss://..."`: the replicas speak TLS to Redis
//! (rustls, with the process's ring provider), and check its certificate
//! against the system's roots (here a test CA given in `SSL_CERT_FILE`).

use std::process::{Command, Stdio};

use serde_json::json;

use crate::common::installed;
use crate::mcp_redis::{eventually, is_error, runs, Replica};

/// Runs `openssl` with `args` in `dir`; it must succeed.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, and a certificate for 127.0.0.1 that it signed.
fn certificates(dir: &std::path::Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "1", "-subj", "/CN=toolrag test CA"];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    openssl(dir, &ca);
    let mut csr = vec!["req", "-subj", "/CN=127.0.0.1"];
    csr.extend(ec);
    csr.extend(["-keyout", "server.key", "-out", "server.csr"]);
    openssl(dir, &csr);
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-days",
            "1",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-extfile",
            "san.ext",
            "-out",
            "server.pem",
        ],
    );
}

/// A process killed on drop, so that a failed assertion leaves none behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Two replicas on a Redis that speaks only TLS: ready, and an approval
/// asked on one and answered on the other runs once.
#[test]
fn replicas_share_their_state_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    certificates(dir.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let _redis = Killed(
        Command::new(installed("target/redis/bin/redis-server", "make redis"))
            .current_dir(dir.path())
            .args(["--bind", "127.0.0.1", "--port", "0", "--tls-port", &port])
            .args([
                "--tls-cert-file",
                "server.pem",
                "--tls-key-file",
                "server.key",
            ])
            .args(["--tls-ca-cert-file", "ca.pem", "--tls-auth-clients", "no"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts"),
    );
    let url = format!("rediss://127.0.0.1:{port}/0");
    let ca = dir.path().join("ca.pem");
    let env = [("SSL_CERT_FILE", ca.to_str().unwrap())];
    let a = Replica::start_with(&url, "", &[], &env);
    let b = Replica::start_with(&url, "", &[], &env);
    for r in [&a, &b] {
        eventually(10, "ready over TLS", || r.readyz().0 == 200);
    }
    assert!(
        a.log().contains("shared state on rediss://127.0.0.1"),
        "{}",
        a.log()
    );
    let state = a.ask("groceries");
    let done = b.answer("groceries", &state);
    assert!(!is_error(&done), "{done}");
    let replay = a.answer("groceries", &state);
    assert!(is_error(&replay), "{replay}");
    assert_eq!(runs(&[&a, &b], "delete_note"), 1);
    // Without the CA, the certificate is refused: degraded, not plain text.
    let stranger = Replica::start_with(&url, "", &[], &[("SSL_CERT_FILE", "/dev/null")]);
    let (status, body) = stranger.readyz();
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["status"], json!("degraded"));
}
