//! A tool hidden by policy and a tool that does not exist are answered
//! alike, in text and in the work done: each queues one audit line and
//! answers without waiting for the disk. Shown with the audit log on a FIFO
//! that nobody reads (a disk that does not answer): every answer still
//! comes back, and once the FIFO is read, no line is missing, even across
//! SIGTERM. The timing figures are in `hidden_and_missing_timing`
//! (ignored: it measures, it does not judge).

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::gw_harness::{Answer, Gw};

const ALICE: &str = "alice-token-0123456789abcdef";
const HIDDEN: &str = "notes/get_time";
const MISSING: &str = "notes/get_tides";
/// Alice sees only the weather.
const POLICY: &str =
    "[[gateway.policy]]\nprincipals = [\"alice\"]\ntools = [\"notes/get_weather\"]\n";
/// `O_NONBLOCK` on Linux.
const O_NONBLOCK: i32 = 0o4000;

/// The answer's result, with the handle asked for written `X`.
fn result_of(a: &Answer, handle: &str) -> String {
    assert_eq!(a.status, 200, "{a:?}");
    a.json()["result"].to_string().replace(handle, "X")
}

#[test]
fn hidden_and_missing_tools_are_answered_alike_while_the_audit_log_is_blocked() {
    let mut fifo: Option<File> = None;
    let config = format!("[gateway]\naudit-log = \"audit.fifo\"\n\n{POLICY}");
    let mut gw = Gw::start(&config, &format!("alice:{ALICE}\n"), |dir| {
        let path = dir.join("audit.fifo");
        assert!(Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap()
            .success());
        // Read and write, so that opening does not wait for a writer; then
        // filled, so that the gateway's first write blocks.
        let mut f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(O_NONBLOCK)
            .open(&path)
            .unwrap();
        loop {
            match f.write(&[b'\n'; 4096]) {
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        fifo = Some(f);
    });
    let mut fifo = fifo.unwrap();

    // 400 calls, alternating, while nothing reads the audit log.
    let mut answers = (Vec::new(), Vec::new());
    for i in 0..400 {
        let handle = if i % 2 == 0 { HIDDEN } else { MISSING };
        let text = result_of(&gw.call(ALICE, handle), handle);
        if i % 2 == 0 {
            &mut answers.0
        } else {
            &mut answers.1
        }
        .push(text);
    }
    assert!(answers.0[0].contains("no tool `X`"), "{}", answers.0[0]);
    assert!(
        answers.0[0].contains("\"isError\":true"),
        "{}",
        answers.0[0]
    );
    for (h, m) in answers.0.iter().zip(&answers.1) {
        assert_eq!(h, m, "a hidden tool and a missing one get the same answer");
    }

    // Stopped while its lines still wait: it writes them all before it ends.
    assert!(Command::new("kill")
        .args(["-TERM", &gw.pid().to_string()])
        .status()
        .unwrap()
        .success());
    let records = drain(&mut fifo, &mut gw, 400);
    let count = |decision: &str, by: &str| {
        records
            .iter()
            .filter(|r| r["decision"] == decision && r["decidedBy"] == by)
            .count()
    };
    assert_eq!(count("denied", "policy"), 200, "{records:?}");
    assert_eq!(count("refused", "gateway"), 200, "{records:?}");
    assert!(records.iter().all(|r| r["principal"] == "alice"));
    let status = gw.wait_exit(Duration::from_secs(30)).expect("it exits");
    assert!(status.success(), "{status:?}\n{}", gw.log());
}

/// Reads the FIFO until `want` audit records came, or the process ended and
/// nothing more comes; the records.
fn drain(fifo: &mut File, gw: &mut Gw, want: usize) -> Vec<Value> {
    let mut text = Vec::new();
    let mut buf = [0u8; 65536];
    let deadline = Instant::now() + Duration::from_secs(60);
    // Only whole lines: a read may end in the middle of one.
    let parse = |text: &[u8]| -> Vec<Value> {
        let whole = text.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        String::from_utf8_lossy(&text[..whole])
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    };
    while Instant::now() < deadline {
        match fifo.read(&mut buf) {
            Ok(n) if n > 0 => text.extend_from_slice(&buf[..n]),
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if parse(&text).len() >= want {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(e) => panic!("{e}"),
        }
    }
    let records = parse(&text);
    assert!(
        records.len() >= want,
        "{} of {want} lines\n{}",
        records.len(),
        gw.log()
    );
    records
}

/// The medians of 400 calls, alternating hidden and missing, over HTTP with
/// a real token and the audit log on disk: a figure for the report, not a
/// test (`cargo test --test integration -- --ignored hidden_and_missing_timing
/// --nocapture`).
#[test]
#[ignore = "a measurement: run it by name"]
fn hidden_and_missing_timing() {
    let gw = Gw::start(POLICY, &format!("alice:{ALICE}\n"), |_| {});
    for _ in 0..20 {
        gw.call(ALICE, HIDDEN);
        gw.call(ALICE, MISSING);
    }
    let (mut hidden, mut missing) = (Vec::new(), Vec::new());
    for i in 0..400 {
        let (handle, into) = if i % 2 == 0 {
            (HIDDEN, &mut hidden)
        } else {
            (MISSING, &mut missing)
        };
        let t = Instant::now();
        let a = gw.call(ALICE, handle);
        into.push(t.elapsed().as_secs_f64() * 1e3);
        assert_eq!(a.status, 200);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    eprintln!(
        "median over 200 calls each: hidden {:.3} ms, missing {:.3} ms",
        median(&mut hidden),
        median(&mut missing)
    );
}
