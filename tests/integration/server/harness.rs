//! A running `toolrag serve` on an ephemeral loopback port, a copy of the
//! shipped registry's index to serve, and a small HTTP client.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::common::root;

/// The index of tools/, built once per test run (reusing the vectors of the
/// last run) into target/tmp; tests serve copies of it.
fn template_index() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("server-index-template");
        build_index(&root().join("tools"), &dir);
        dir
    })
}

/// `toolrag index <registry> --out <out>`, waiting out another build's lock.
pub fn build_index(registry: &Path, out: &Path) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let o = Command::new(env!("CARGO_BIN_EXE_toolrag"))
            .current_dir(root())
            .arg("index")
            .arg(registry)
            .arg("--out")
            .arg(out)
            .output()
            .expect("toolrag index runs");
        if o.status.success() {
            return;
        }
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("is building into") && Instant::now() < deadline,
            "toolrag index failed: {err}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A fresh index folder holding a copy of the template's live generation.
pub fn index_copy() -> tempfile::TempDir {
    let template = template_index();
    let gen = std::fs::read_to_string(template.join("CURRENT")).unwrap();
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    copy_dir(&template.join(gen.trim()), &dir.path().join(gen.trim()));
    std::fs::write(dir.path().join("CURRENT"), &gen).unwrap();
    dir
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A `toolrag serve` child process, killed on drop.
pub struct Server {
    child: Child,
    pub base: String,
    pub token: Option<String>,
    stderr: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `toolrag serve --index <index> --addr 127.0.0.1:0 <extra>` and
    /// waits until it is ready.
    pub fn start(index: &Path, extra: &[&str]) -> Server {
        Server::start_env(index, extra, &[])
    }

    /// [`Server::start`] with `env` added to the server's environment.
    pub fn start_env(index: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_toolrag"))
            .current_dir(root())
            .args(["serve", "--addr", "127.0.0.1:0", "--index"])
            .arg(index)
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("toolrag serve starts");
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let lines = BufReader::new(child.stderr.take().unwrap());
        let sink = stderr.clone();
        std::thread::spawn(move || {
            for line in lines.lines().map_while(Result::ok) {
                if let Some(addr) = line.strip_prefix("toolrag: listening on ") {
                    let _ = tx.send(addr.to_string());
                }
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        });
        let base = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no address: {}", stderr.lock().unwrap()));
        let token = extra.iter().position(|a| *a == "--token-file").map(|i| {
            std::fs::read_to_string(extra[i + 1])
                .unwrap()
                .trim()
                .to_string()
        });
        let server = Server {
            child,
            base,
            token,
            stderr,
        };
        server.wait_ready();
        server
    }

    fn wait_ready(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.get("/readyz").status == 200 {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("never ready: {}", self.stderr());
    }

    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the process to exit, up to `limit`.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(s) = self.child.try_wait().unwrap() {
                return Some(s);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn get(&self, path: &str) -> Resp {
        request(&self.url(path), "GET", self.token.as_deref(), None)
    }

    pub fn post_json(&self, path: &str, body: &str) -> Resp {
        request(
            &self.url(path),
            "POST",
            self.token.as_deref(),
            Some(("application/json", body)),
        )
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// The generation `/readyz` reports.
    pub fn generation(&self) -> String {
        self.get("/readyz").json()["generation"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Waits until the server serves `gen`.
    pub fn wait_generation(&self, gen: &str) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.generation() != gen {
            assert!(
                Instant::now() < deadline,
                "never served {gen}: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An answer: status, headers and body.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The error code of an error body.
    pub fn code(&self) -> String {
        serde_json::from_str::<serde_json::Value>(&self.body).map_or(String::new(), |v| {
            v["error"]["code"].as_str().unwrap_or("").to_string()
        })
    }
}

fn agent() -> &'static ureq::Agent {
    static A: OnceLock<ureq::Agent> = OnceLock::new();
    A.get_or_init(|| {
        ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into()
    })
}

/// One HTTP request; `body` is (content type, text), an empty content type
/// sending none.
pub fn request(url: &str, method: &str, token: Option<&str>, body: Option<(&str, &str)>) -> Resp {
    let auth = token.map(|t| format!("Bearer {t}"));
    let result = match (method, body) {
        ("GET", None) => {
            let mut r = agent().get(url);
            if let Some(a) = &auth {
                r = r.header("authorization", a);
            }
            r.call()
        }
        (m, body) => {
            let mut r = match m {
                "POST" => agent().post(url),
                "PUT" => agent().put(url),
                "DELETE" => return send_empty(agent().delete(url), auth.as_deref()),
                other => panic!("method {other}"),
            };
            if let Some(a) = &auth {
                r = r.header("authorization", a);
            }
            let (ct, text) = body.unwrap_or(("", ""));
            if !ct.is_empty() {
                r = r.header("content-type", ct);
            }
            r.send(text)
        }
    };
    into_resp(result)
}

fn send_empty(r: ureq::RequestBuilder<ureq::typestate::WithoutBody>, auth: Option<&str>) -> Resp {
    let r = match auth {
        Some(a) => r.header("authorization", a),
        None => r,
    };
    into_resp(r.call())
}

fn into_resp(result: Result<ureq::http::Response<ureq::Body>, ureq::Error>) -> Resp {
    let mut resp = result.expect("the server answers");
    Resp {
        status: resp.status().as_u16(),
        headers: resp
            .headers()
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect(),
        body: resp.body_mut().read_to_string().unwrap_or_default(),
    }
}
