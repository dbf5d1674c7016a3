//! A real `redis-server` (Debian's, unpacked by `make redis` under
//! target/redis) on a free loopback port, for the tests of gateway replicas
//! that share their state on it; spoken to in Redis's inline protocol.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::installed;

/// A `redis-server` on loopback, with no persistence, killed on drop.
pub struct Redis {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    args: Vec<String>,
}

impl Redis {
    pub fn start() -> Redis {
        Redis::start_with(&[])
    }

    /// [`Redis::start`] with more arguments to `redis-server`.
    pub fn start_with(args: &[&str]) -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut r = Redis {
            child: None,
            port,
            dir: tempfile::tempdir().unwrap(),
            args: args.iter().map(|a| a.to_string()).collect(),
        };
        r.restart();
        r
    }

    /// Starts it (again) on its port, and waits until it answers.
    pub fn restart(&mut self) {
        let bin = installed("target/redis/bin/redis-server", "make redis");
        let child = Command::new(bin)
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(pong) = self.command("PING") {
                // A Redis with a password answers, but only NOAUTH.
                if pong.starts_with("+PONG") || pong.starts_with("-NOAUTH") {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "redis-server did not answer");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// One inline command; the raw first line of the answer.
    pub fn command(&self, line: &str) -> std::io::Result<String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(format!("{line}\r\n").as_bytes())?;
        let mut answer = String::new();
        BufReader::new(s).read_line(&mut answer)?;
        Ok(answer.trim_end().to_string())
    }

    /// The keys under `pattern`, each with its TTL in ms.
    pub fn ttls(&self, pattern: &str) -> Vec<(String, i64)> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.write_all(format!("KEYS {pattern}\r\n").as_bytes())
            .unwrap();
        let mut r = BufReader::new(s.try_clone().unwrap());
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        let n: usize = line.trim()[1..].parse().unwrap();
        let mut keys = Vec::new();
        for _ in 0..n {
            line.clear();
            r.read_line(&mut line).unwrap();
            line.clear();
            r.read_line(&mut line).unwrap();
            keys.push(line.trim_end().to_string());
        }
        keys.into_iter()
            .map(|k| {
                let ttl = self.command(&format!("PTTL {k}")).unwrap();
                (k, ttl.trim_start_matches(':').parse().unwrap())
            })
            .collect()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.kill();
    }
}
