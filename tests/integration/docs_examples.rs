//! Every shell example of README.md and docs/**/*.md runs, so the docs cannot
//! go stale.
//!
//! A fenced block is an example when its info string starts with `sh` or
//! `console`:
//! - ` ```sh `: the block is a bash script;
//! - ` ```console `: its lines that start with `$ ` are the script (the other
//!   lines are output, shown to the reader and not checked);
//! - ` ```sh no-run ` (or ` ```console no-run `): the block is not run, for
//!   what this machine cannot do (a real client's configuration in `~`, a
//!   recursive `make test`). Each `toolrag SUBCOMMAND ...` in it is checked
//!   instead: the subcommand exists and every `--flag` it uses is in its
//!   `--help`; each `make TARGET`: the Makefile has that target. Such a block
//!   must hold at least one command of either kind.
//!
//! The blocks of one file run in order, each in its own `bash` under
//! `set -euo pipefail`, in one working directory per file: a scratch folder
//! holding copies of `tools/`, `tests/`, `examples/` and `spec/` and a link to
//! `models/` (the real model: `make test` fetches it first), with the
//! `toolrag` this test was built with first on PATH. So a later block sees the
//! files an earlier one wrote (an index, say), and no block can touch the
//! repository. A block that fails or runs past its timeout fails the test,
//! naming the file and the line of its opening fence, with its output; the
//! file's later blocks are not run, and its scratch folder is kept for a look. Whatever a block left running (a server
//! started with `&`, a coprocess) is stopped when the block ends.
//!
//! A fence marked `bash`, `shell` or `zsh` is refused: mark it `sh` to have it
//! run, or `text` if it is not a command to run.
//!
//! `TOOLRAG_DOCS=gateway cargo test --test integration docs_examples` runs only
//! the files whose path contains `gateway`.

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Longest a block may run. The slowest ones build an index with the model
/// and start servers: seconds, or a minute on a loaded machine.
const BLOCK_TIMEOUT: Duration = Duration::from_secs(300);

/// Copied into each file's working directory (small, and examples may edit them).
const COPIED: &[&str] = &["tools", "tests", "examples", "spec"];
/// Linked into it (large, read only).
const LINKED: &[&str] = &["models"];

fn repo() -> PathBuf {
    crate::common::root()
}

#[derive(Debug, PartialEq)]
enum Kind {
    Run,
    NoRun,
}

#[derive(Debug)]
struct Block {
    /// The Markdown file, relative to the repository.
    file: String,
    /// The line of the opening fence, from 1.
    line: usize,
    kind: Kind,
    script: String,
}

impl Block {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }
}

/// README.md and every Markdown file under docs/, in a stable order.
fn doc_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut files = vec![repo().join("README.md")];
    walk(&repo().join("docs"), &mut files);
    files
}

/// The example blocks of one Markdown text, and the problems of its fences.
fn blocks(file: &str, text: &str) -> (Vec<Block>, Vec<String>) {
    let (mut out, mut problems) = (Vec::new(), Vec::new());
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            continue;
        };
        let indent = line.len() - trimmed.len();
        let mut words = info.split_whitespace();
        let lang = words.next().unwrap_or("");
        let flags: Vec<&str> = words.collect();
        let mut body = Vec::new();
        let mut closed = false;
        for (_, l) in lines.by_ref() {
            if l.trim() == "```" {
                closed = true;
                break;
            }
            // Inside a list item the block is indented with its fence.
            let cut = l.len() - l.trim_start().len();
            body.push(&l[cut.min(indent)..]);
        }
        let at = format!("{file}:{}", i + 1);
        if !closed {
            problems.push(format!("{at}: a fence that is never closed"));
            break;
        }
        let kind = if flags.contains(&"no-run") {
            Kind::NoRun
        } else {
            Kind::Run
        };
        let script = match lang {
            "sh" => body.join("\n"),
            "console" => body
                .iter()
                .filter_map(|l| l.strip_prefix("$ "))
                .collect::<Vec<_>>()
                .join("\n"),
            "bash" | "shell" | "zsh" => {
                problems.push(format!(
                    "{at}: a ```{lang} block: mark it ```sh to have it run (or ```sh no-run), or ```text"
                ));
                continue;
            }
            _ => continue,
        };
        if let Some(f) = flags.iter().find(|f| **f != "no-run") {
            problems.push(format!(
                "{at}: unknown flag `{f}` on a ```{lang} block (only no-run)"
            ));
        }
        if script.trim().is_empty() {
            problems.push(format!("{at}: an empty ```{lang} block"));
            continue;
        }
        out.push(Block {
            file: file.to_string(),
            line: i + 1,
            kind,
            script,
        });
    }
    (out, problems)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ty = e.file_type().unwrap();
        if ty.is_dir() {
            if e.file_name() == "__pycache__" {
                continue;
            }
            copy_dir(&src, &dst);
        } else if ty.is_symlink() {
            std::os::unix::fs::symlink(fs::read_link(&src).unwrap(), &dst).unwrap();
        } else {
            fs::copy(&src, &dst).unwrap();
        }
    }
}

/// A fresh working directory for one file's blocks.
fn scratch(file: &str) -> PathBuf {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let name: String = file
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let root = std::env::temp_dir().join(format!(
        "toolrag-docs-{}-{stamp}-{name}",
        std::process::id()
    ));
    let work = root.join("work");
    fs::create_dir_all(root.join("logs")).unwrap();
    for d in COPIED {
        copy_dir(&repo().join(d), &work.join(d));
    }
    for d in LINKED {
        std::os::unix::fs::symlink(repo().join(d), work.join(d)).unwrap();
    }
    root
}

/// Signals every process of a block's group (bash and what it started).
fn kill_group(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([signal, "--", &format!("-{pid}")])
        .stderr(Stdio::null())
        .status();
}

enum Outcome {
    Exited(ExitStatus),
    TimedOut,
}

/// Runs one block in `root/work`; returns its outcome and its output.
fn run(block: &Block, root: &Path, n: usize) -> (Outcome, String) {
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_toolrag"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let log = root
        .join("logs")
        .join(format!("{n:02}-line-{}.log", block.line));
    let out = fs::File::create(&log).unwrap();
    let mut child = Command::new("bash")
        .args(["--noprofile", "--norc", "-c"])
        .arg(format!("set -euo pipefail\n{}\n", block.script))
        .current_dir(root.join("work"))
        .env("PATH", path)
        .env_remove("TOOLRAG_MODEL_DIR")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .process_group(0)
        .spawn()
        .expect("bash runs");
    let pid = child.id();
    let start = Instant::now();
    let outcome = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Outcome::Exited(status);
        }
        if start.elapsed() > BLOCK_TIMEOUT {
            kill_group(pid, "-KILL");
            let _ = child.wait();
            break Outcome::TimedOut;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // A server or coprocess the block left behind.
    kill_group(pid, "-TERM");
    std::thread::sleep(Duration::from_millis(100));
    kill_group(pid, "-KILL");
    (outcome, fs::read_to_string(&log).unwrap_or_default())
}

/// The last `n` lines of a block's output.
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Shell words of one command line: quotes joined, no expansion.
fn words(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (None, '#') if !any => break,
            _ => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// The commands of a script: continuation lines joined, split at `|`, `;`, `&&`, `||`.
fn commands(script: &str) -> Vec<Vec<String>> {
    let joined = script.replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let mut cmd = Vec::new();
        for w in words(line) {
            if matches!(w.as_str(), "|" | ";" | "&&" | "||" | "&") {
                out.push(std::mem::take(&mut cmd));
            } else {
                cmd.push(w);
            }
        }
        out.push(cmd);
    }
    out.into_iter()
        .map(|c: Vec<String>| {
            c.into_iter()
                .skip_while(|w| w.contains('=') && !w.starts_with('-'))
                .collect()
        })
        .filter(|c: &Vec<String>| !c.is_empty())
        .collect()
}

/// What a `no-run` block can be checked for without running it.
fn check_no_run(block: &Block) -> Vec<String> {
    let makefile = fs::read_to_string(repo().join("Makefile")).unwrap();
    let mut problems = Vec::new();
    let mut checked = 0;
    for cmd in commands(&block.script) {
        match cmd[0].as_str() {
            "make" => {
                checked += 1;
                for target in cmd[1..]
                    .iter()
                    .filter(|w| !w.starts_with('-') && !w.contains('='))
                {
                    let defined = makefile.lines().any(|l| {
                        l.split_once(':')
                            .is_some_and(|(names, _)| names.split_whitespace().any(|n| n == target))
                            && !l.starts_with('\t')
                    });
                    if !defined {
                        problems.push(format!(
                            "`make {target}`: the Makefile has no target `{target}`"
                        ));
                    }
                }
            }
            "toolrag" => {
                checked += 1;
                // The subcommand (and a sub-subcommand such as `tools list`): the
                // words before the first option.
                let sub: Vec<&String> = cmd[1..]
                    .iter()
                    .take_while(|w| !w.starts_with('-'))
                    .take(2)
                    .collect();
                let help = |sub: &[&String]| {
                    Command::new(env!("CARGO_BIN_EXE_toolrag"))
                        .args(sub.iter().map(|s| s.as_str()))
                        .arg("--help")
                        .output()
                        .unwrap()
                };
                let mut out = help(&sub);
                if !out.status.success() && sub.len() == 2 {
                    out = help(&sub[..1]);
                }
                if !out.status.success() {
                    problems.push(format!(
                        "`{}`: `toolrag {} --help` fails: {}",
                        cmd.join(" "),
                        sub.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" "),
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                    continue;
                }
                let text = String::from_utf8_lossy(&out.stdout);
                for flag in cmd.iter().filter(|w| w.starts_with("--")) {
                    let name = flag.split('=').next().unwrap();
                    let known = text
                        .split(|c: char| {
                            c.is_whitespace() || c == ',' || c == '[' || c == ']' || c == '='
                        })
                        .any(|w| w == name);
                    if !known {
                        problems.push(format!(
                            "`{}`: `{name}` is not an option of `toolrag {}`",
                            cmd.join(" "),
                            sub.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")
                        ));
                    }
                }
            }
            _ => {}
        }
    }
    if checked == 0 {
        problems.push("a no-run block with no `toolrag` or `make` command to check".into());
    }
    problems
}

#[test]
fn every_shell_example_in_the_docs_runs() {
    let only = std::env::var("TOOLRAG_DOCS").ok();
    let mut failures = Vec::new();
    let mut ran = 0;
    for path in doc_files() {
        let file = path.strip_prefix(repo()).unwrap().display().to_string();
        if only.as_deref().is_some_and(|o| !file.contains(o)) {
            continue;
        }
        let (blocks, problems) = blocks(&file, &fs::read_to_string(&path).unwrap());
        failures.extend(problems);
        if blocks.is_empty() {
            continue;
        }
        let root = scratch(&file);
        let mut failed_here = false;
        for (n, block) in blocks.iter().enumerate() {
            ran += 1;
            if failed_here && block.kind == Kind::Run {
                // It may need what the failed block was to make.
                failures.push(format!("{}: not run, after the failure above", block.at()));
                continue;
            }
            if block.kind == Kind::NoRun {
                for p in check_no_run(block) {
                    failures.push(format!("{} (no-run): {p}", block.at()));
                }
                continue;
            }
            let began = Instant::now();
            let (outcome, output) = run(block, &root, n);
            let why = match outcome {
                Outcome::Exited(s) if s.success() => {
                    eprintln!(
                        "docs: {} ok in {:.1} s",
                        block.at(),
                        began.elapsed().as_secs_f64()
                    );
                    continue;
                }
                Outcome::Exited(s) => format!("failed ({s})"),
                Outcome::TimedOut => format!("did not finish in {} s", BLOCK_TIMEOUT.as_secs()),
            };
            failed_here = true;
            failures.push(format!(
                "{}: this ```sh block {why}, in {}\n--- block ---\n{}\n--- its output (last 40 lines) ---\n{}",
                block.at(),
                root.join("work").display(),
                block.script,
                tail(&output, 40)
            ));
        }
        if !failed_here {
            let _ = fs::remove_dir_all(&root);
        }
    }
    eprintln!("docs: {ran} examples, {} failures", failures.len());
    assert!(
        failures.is_empty(),
        "{} of the docs' examples failed:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(
        ran > 0 || only.is_some(),
        "no example found in README.md and docs/"
    );
}

#[test]
fn fences_are_read_as_the_runner_documents() {
    let text = "intro\n```sh\ntoolrag index\n```\n- item\n  ```sh no-run\n  make demo\n  ```\n\
                ```console\n$ toolrag rule\nTR001 missing-examples\n```\n```toml\nx = 1\n```\n```bash\nls\n```\n";
    let (b, problems) = blocks("x.md", text);
    assert_eq!(b.len(), 3, "{b:?}");
    assert_eq!(
        (b[0].line, b[0].kind == Kind::Run, b[0].script.as_str()),
        (2, true, "toolrag index")
    );
    assert_eq!(
        (b[1].line, b[1].kind == Kind::NoRun, b[1].script.as_str()),
        (6, true, "make demo")
    );
    assert_eq!(b[2].script, "toolrag rule");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("x.md:16: a ```bash block"),
        "{problems:?}"
    );
    assert_eq!(
        commands("A=1 toolrag query \"a | b\" --index ix | jq . && make test # done\nx \\\n  --y"),
        vec![
            vec!["toolrag", "query", "a | b", "--index", "ix"],
            vec!["jq", "."],
            vec!["make", "test"],
            vec!["x", "--y"],
        ]
    );
}

#[test]
fn a_no_run_block_is_checked_against_the_command_line() {
    let block = |script: &str| Block {
        file: "x.md".into(),
        line: 1,
        kind: Kind::NoRun,
        script: script.into(),
    };
    assert!(check_no_run(&block(
        "make demo\ntoolrag index --mcp-config ~/c.json --mcp-timeout 60"
    ))
    .is_empty());
    assert!(check_no_run(&block("toolrag tools list --format json")).is_empty());
    let p = check_no_run(&block(
        "toolrag index --no-such-flag\ntoolrag frobnicate\nmake nothing-here",
    ));
    assert_eq!(p.len(), 3, "{p:?}");
    assert!(
        p[0].contains("`--no-such-flag` is not an option of `toolrag index`"),
        "{p:?}"
    );
    assert!(p[1].contains("`toolrag frobnicate --help` fails"), "{p:?}");
    assert!(p[2].contains("no target `nothing-here`"), "{p:?}");
    assert_eq!(check_no_run(&block("cp a b")).len(), 1);
}
