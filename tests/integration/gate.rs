//! The plan gate: the fixture suite (library and CLI against expected verdicts),
//! CLI exit codes and formats, the repair chain, property tests and fuzzing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use proptest::prelude::*;
use serde::Deserialize;
use serde_json::{json, Value};
use toolrag::gate::{self, Abort, Approval, Code, Gate, Proposal, Verdict};
use toolrag::registry::LoadOptions;
use toolrag::search::khipu::Candidate;
use toolrag::Registry;

use crate::common::{fixture, shipped_tools, toolrag};

// ---------------------------------------------------------------- fixtures

/// `NAME.expected.json` next to each `NAME.json` plan.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    /// What the fixture shows.
    description: String,
    /// The offered candidate file, relative to tests/fixtures/gate.
    offered: Option<String>,
    /// Whether to resolve tools (registry in the library, index in the CLI).
    index: bool,
    valid: bool,
    violations: Vec<ExpectedViolation>,
    /// Checked when present; must be empty when absent.
    #[serde(default, rename = "requiresApproval")]
    requires_approval: Vec<Approval>,
}

#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
struct ExpectedViolation {
    code: Code,
    path: String,
}

struct Fixture {
    name: String,
    path: PathBuf,
    plan: Value,
    expected: Expected,
}

fn fixtures() -> Vec<Fixture> {
    let dir = fixture("gate/plans");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        let Some(stem) = name.strip_suffix(".expected.json") else {
            continue;
        };
        let plan_path = dir.join(format!("{stem}.json"));
        let plan = read(&plan_path);
        let expected: Expected = serde_json::from_value(read(&path))
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        out.push(Fixture {
            name: stem.to_string(),
            path: plan_path,
            plan,
            expected,
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn offered(file: &str) -> Vec<Candidate> {
    gate::parse_offered(&read(&fixture(&format!("gate/{file}")))).unwrap()
}

fn shipped_registry() -> &'static Registry {
    static R: OnceLock<Registry> = OnceLock::new();
    R.get_or_init(|| Registry::load(&[shipped_tools()], &LoadOptions::default()).unwrap())
}

/// A lexical-only index of tools/, built once through the CLI (no model: fast).
fn lexical_index() -> &'static Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        toolrag()
            .args(["index", "--lexical-only", "--out"])
            .arg(dir.path())
            .assert()
            .success();
        dir
    })
    .path()
}

/// The differences between a verdict and a fixture's expectations.
fn mismatch(f: &Fixture, verdict: &Verdict) -> Option<String> {
    let got: Vec<ExpectedViolation> = verdict
        .violations
        .iter()
        .map(|v| ExpectedViolation {
            code: v.code,
            path: v.path.clone(),
        })
        .collect();
    let e = &f.expected;
    (verdict.valid != e.valid
        || got != e.violations
        || verdict.requires_approval != e.requires_approval)
        .then(|| {
            format!(
                "{} ({}):\n  expected {:?} {:?}\n  got      {}",
                f.name,
                e.description,
                e.violations,
                e.requires_approval,
                serde_json::to_string(verdict).unwrap()
            )
        })
}

#[test]
fn the_fixture_suite_has_30_plans_and_covers_every_check() {
    let all = fixtures();
    assert!(all.len() >= 30, "only {} fixtures", all.len());
    let valid = all.iter().filter(|f| f.expected.valid).count();
    assert!(valid >= 5 && all.len() - valid >= 25, "{valid} valid");
    let covered: BTreeSet<Code> = all
        .iter()
        .flat_map(|f| f.expected.violations.iter().map(|v| v.code))
        .collect();
    for code in Code::ALL {
        // Only text proposals can be not-JSON; the chain tests cover it.
        if code != Code::InvalidJson {
            assert!(covered.contains(&code), "no fixture for `{code}`");
        }
    }
    assert!(all.iter().any(|f| !f.expected.requires_approval.is_empty()));
}

#[test]
fn the_synthetic_example_the_schema_describes_passes() {
    let f = fixtures()
        .into_iter()
        .find(|f| f.name == "valid-synthetic-example")
        .unwrap();
    assert_eq!(f.plan["provenance"], "SYNTHETIC");
    assert!(f.plan["candidates"][0]["nodeId"]
        .as_str()
        .unwrap()
        .starts_with("node://khipu-synthetic/"));
    let verdict = gate::check(&f.plan, None);
    assert!(verdict.valid, "{verdict:?}");
    assert_eq!(gate::repair_feedback(&verdict), "");
}

#[test]
fn library_verdicts_match_every_fixture() {
    let mut failures = Vec::new();
    for f in fixtures() {
        let offered = f.expected.offered.as_deref().map(offered);
        let gate = Gate {
            offered: offered.as_deref(),
            tools: f
                .expected
                .index
                .then(|| shipped_registry() as &dyn gate::ToolResolver),
        };
        let verdict = gate.check(&f.plan);
        failures.extend(mismatch(&f, &verdict));
        // Every pointer names a place that exists in the plan.
        for v in &verdict.violations {
            assert!(f.plan.pointer(&v.path).is_some(), "{}: {v}", f.name);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn cli_verdicts_match_the_library_and_every_fixture() {
    let index = lexical_index();
    let mut failures = Vec::new();
    for f in fixtures() {
        let mut cmd = toolrag();
        cmd.arg("gate").arg(&f.path).args(["--format", "json"]);
        if let Some(o) = &f.expected.offered {
            cmd.arg("--offered").arg(fixture(&format!("gate/{o}")));
        }
        if f.expected.index {
            cmd.arg("--index").arg(index);
        }
        let out = cmd.output().unwrap();
        let verdict: Verdict = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{}: {e}: {}", f.name, String::from_utf8_lossy(&out.stderr))
        });
        assert_eq!(
            out.status.code(),
            Some(if f.expected.valid { 0 } else { 1 }),
            "{}",
            f.name
        );
        failures.extend(mismatch(&f, &verdict));
        let offered = f.expected.offered.as_deref().map(offered);
        let mut library = gate::check(&f.plan, offered.as_deref());
        library.requires_approval = verdict.requires_approval.clone();
        assert_eq!(
            verdict, library,
            "{}: the CLI and the library differ",
            f.name
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------- CLI

#[test]
fn human_format_prints_one_line_per_violation_and_a_summary() {
    toolrag()
        .args([
            "gate",
            "tests/fixtures/gate/plans/not-offered-citation.json",
            "--offered",
            "tests/fixtures/gate/offered-git.json",
        ])
        .assert()
        .code(1)
        .stdout(
            "tests/fixtures/gate/plans/not-offered-citation.json: error[not-offered] at /citedNodeIds/1: \
             citation 2 is \"tool://git/git_revert\", which was not offered; choose one of: \
             \"tool://git/git_reset\", \"tool://git/git_commit\", \"tool://git/git_show\", \
             \"tool://git/git_log\", \"tool://git/git_diff\", \"tool://git/git_checkout\", \
             \"tool://git/git_diff_staged\", \"tool://git/git_status\", \
             \"tool://git/git_diff_unstaged\", \"tool://git/git_create_branch\"\n\
             tests/fixtures/gate/plans/not-offered-citation.json: error[cited-not-acted-on] at /citedNodeIds/1: \
             \"tool://git/git_revert\" is cited but no step acts on it; add a step over it, or do not cite it\n\
             tests/fixtures/gate/plans/not-offered-citation.json: invalid (2 violations)\n",
        );
}

#[test]
fn human_format_lists_approvals_for_a_valid_plan() {
    toolrag()
        .args([
            "gate",
            "tests/fixtures/gate/plans/valid-two-approvals.json",
            "--offered",
            "tests/fixtures/gate/offered-chat.json",
            "--index",
        ])
        .arg(lexical_index())
        .assert()
        .code(0)
        .stdout(
            "tests/fixtures/gate/plans/valid-two-approvals.json: approval required before running \
             tool://shell/run_command: destructive; open world and not idempotent\n\
             tests/fixtures/gate/plans/valid-two-approvals.json: approval required before running \
             tool://chat/post_message: open world and not idempotent\n\
             tests/fixtures/gate/plans/valid-two-approvals.json: valid\n",
        );
}

#[test]
fn help_teaches_exit_codes_and_examples() {
    toolrag()
        .args(["gate", "--help"])
        .assert()
        .success()
        .stdout(predicates::str::contains(
            "Exit status: 0 when the plan is valid",
        ))
        .stdout(predicates::str::contains(
            "toolrag gate plan.json --offered offered.json",
        ));
}

#[test]
fn a_dash_reads_the_plan_from_stdin() {
    let plan = std::fs::read(fixture("gate/plans/valid-git-reset.json")).unwrap();
    toolrag()
        .args([
            "gate",
            "-",
            "--offered",
            "tests/fixtures/gate/offered-git.json",
        ])
        .write_stdin(plan)
        .assert()
        .code(0)
        .stdout("<stdin>: valid\n");
    // --offered can come from stdin too, as a bare array of candidates.
    let offered = serde_json::to_vec(&offered("offered-git.json")).unwrap();
    toolrag()
        .args(["gate", "tests/fixtures/gate/plans/candidate-missing.json"])
        .args(["--offered", "-", "--format", "json"])
        .write_stdin(offered)
        .assert()
        .code(1)
        .stdout(predicates::str::contains("\"code\": \"candidate-missing\""));
}

#[test]
fn unreadable_input_exits_2_naming_the_file() {
    let cases: [(&[&str], &[u8], &str); 5] = [
        (
            &["gate", "no/such/plan.json"],
            b"",
            "toolrag: no/such/plan.json: cannot read",
        ),
        (
            &["gate", "-"],
            b"{\"decision\": ",
            "toolrag: <stdin>: not valid JSON",
        ),
        (
            &["gate", "-", "--offered", "README.md"],
            b"{}",
            "toolrag: README.md: not valid JSON",
        ),
        (
            &[
                "gate",
                "-",
                "--offered",
                "tests/fixtures/gate/plans/schema-not-an-object.json",
            ],
            b"{}",
            "schema-not-an-object.json: offered candidates: [0].planId: unknown field `planId`",
        ),
        (
            &["gate", "-", "--offered", "-"],
            b"{}",
            "cannot both be read from standard input",
        ),
    ];
    for (args, stdin, message) in cases {
        toolrag()
            .args(args)
            .write_stdin(stdin)
            .assert()
            .code(2)
            .stdout("")
            .stderr(predicates::str::contains(message));
    }
}

#[test]
fn a_real_query_feeds_the_gate_end_to_end() {
    let index = lexical_index();
    let out = toolrag()
        .args([
            "query",
            "delete the file /tmp/old.log",
            "--format",
            "khipu",
            "-k",
            "5",
        ])
        .arg("--index")
        .arg(index)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let set: Value = serde_json::from_slice(&out.stdout).unwrap();
    let first = set["candidates"][0]["nodeId"].clone();
    let plan = plan_over(&set["candidates"], "NAVIGATE", &[first.as_str().unwrap()]);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("offered.json"), &out.stdout).unwrap();
    std::fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
    let out = toolrag()
        .arg("gate")
        .arg(dir.path().join("plan.json"))
        .arg("--offered")
        .arg(dir.path().join("offered.json"))
        .arg("--index")
        .arg(index)
        .args(["--format", "json"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let verdict: Verdict = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(first, "tool://filesystem/delete_file");
    assert_eq!(verdict.requires_approval.len(), 1, "{verdict:?}");
}

/// A plan over `candidates` that acts on and cites `cited` (or abstains).
fn plan_over(candidates: &Value, decision: &str, cited: &[&str]) -> Value {
    let steps: Vec<Value> = cited
        .iter()
        .map(|id| json!({ "action": "CITE", "nodeId": id, "rationale": "fits the request" }))
        .collect();
    json!({
        "planId": "plan-test",
        "capabilityProfile": "SZL-Khipu-1.5B-BrainNavigator",
        "provenance": "MODEL_PROPOSED",
        "query": "a request",
        "contentAccess": "HANDLES_ONLY",
        "candidates": candidates,
        "decision": decision,
        "steps": steps,
        "citedNodeIds": cited,
        "groundedOnly": true,
        "brainBinding": { "protocol": "khipu-retrieval", "status": "NOT_RESOLVED",
                          "note": "handles only" },
        "controllerBoundary": "the controller resolves handles outside the weights",
        "abstainReason": if decision == "ABSTAIN" { json!("nothing fits") } else { Value::Null },
    })
}

// ---------------------------------------------------------------- feedback and chain

#[test]
fn repair_feedback_is_numbered_exact_and_points_at_each_problem() {
    let f = read(&fixture("gate/plans/flipped-decision.json"));
    let text = gate::repair_feedback(&gate::check(&f, Some(&offered("offered-git.json"))));
    assert_eq!(
        text,
        "The plan gate rejected the plan: 3 problems. Fix every one and send the whole corrected plan again, as JSON only.\n\
         1. /steps: decision is ABSTAIN but there are 2 steps; an abstaining plan has none: set \"steps\" to [], or NAVIGATE\n\
         2. /citedNodeIds: decision is ABSTAIN but there is 1 citation; an abstaining plan cites nothing: set \"citedNodeIds\" to [], or NAVIGATE\n\
         3. /abstainReason: decision is ABSTAIN but abstainReason is null; say in a sentence why no offered candidate supports the query\n"
    );
}

#[test]
fn the_chain_repairs_a_hallucinated_citation_from_the_feedback() {
    let offered = offered("offered-git.json");
    let candidates = serde_json::to_value(&offered).unwrap();
    let mut prompts = Vec::new();
    let accepted = gate::run_with_repair(
        |attempt| {
            prompts.push(attempt.feedback.map(str::to_string));
            let id = match attempt.feedback {
                None => "tool://git/git_revert",
                // The fake model takes the first handle the gate suggests.
                Some(f) => f
                    .split("choose one of: \"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap(),
            };
            Ok::<_, std::convert::Infallible>(plan_over(&candidates, "NAVIGATE", &[id]).to_string())
        },
        Some(&offered),
        3,
    )
    .unwrap();
    assert_eq!(accepted.attempts, 2);
    assert_eq!(accepted.plan["citedNodeIds"][0], "tool://git/git_reset");
    assert_eq!(prompts[0], None);
    assert!(prompts[1]
        .as_deref()
        .unwrap()
        .contains("which was not offered"));
}

#[test]
fn the_chain_aborts_with_the_last_verdict_after_max_retry() {
    let mut calls = 0;
    let result = gate::run_with_repair(
        |attempt| {
            calls += 1;
            assert_eq!(attempt.number, calls);
            assert_eq!(attempt.previous.is_some(), calls > 1);
            let text = if calls == 1 { "```json\n{}\n```" } else { "{}" };
            Ok::<_, std::convert::Infallible>(text)
        },
        None,
        2,
    );
    let Err(Abort::Rejected(rejection)) = result else {
        panic!("expected a rejection")
    };
    assert_eq!((rejection.attempts, calls), (3, 3));
    assert_eq!(rejection.proposal, Proposal::Text("{}".into()));
    let verdict = &rejection.verdict;
    assert!(verdict.has(Code::Schema) && !verdict.has(Code::InvalidJson));

    // With no retries, one proposal is judged; text that is not JSON is
    // a violation to repair, not an error.
    let result = gate::run_with_repair(|_| Ok::<_, String>("no plan today"), None, 0);
    let verdict = result.unwrap_err().verdict().cloned().unwrap();
    assert_eq!(verdict.codes(), [Code::InvalidJson]);
}

#[test]
fn the_chain_stops_at_once_when_the_proposer_fails() {
    let result = gate::run_with_repair(
        |a| {
            if a.number == 1 {
                Ok(json!({}))
            } else {
                Err("model unavailable")
            }
        },
        None,
        5,
    );
    match result {
        Err(Abort::Proposer { attempt: 2, error }) => assert_eq!(error, "model unavailable"),
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------- properties

const KINDS: [&str; 5] = ["ARTIFACT", "CLAIM", "EDGE", "INDEX", "SUMMARY"];
const LABELS: [&str; 6] = [
    "MEASURED",
    "REPORTED",
    "DECLARED",
    "SIMULATED",
    "UNKNOWN",
    "UNAVAILABLE",
];
const ACTIONS: [&str; 3] = ["RETRIEVE", "EXPAND", "CITE"];
/// Offered ids are lower-case; this one can never be offered.
const FOREIGN: &str = "tool://FOREIGN/hallucinated";

/// An offered set and a plan built only from it, with a consistent decision.
#[derive(Debug, Clone)]
struct Case {
    offered: Vec<Candidate>,
    plan: Value,
    navigate: bool,
}

fn candidates() -> impl Strategy<Value = Vec<Candidate>> {
    prop::collection::btree_set("tool://[a-z]{1,6}/[a-z_]{1,10}", 1..8).prop_flat_map(|ids| {
        let n = ids.len();
        let fields = (
            prop::sample::select(KINDS.to_vec()),
            prop::sample::select(LABELS.to_vec()),
            "\\PC{0,40}",
        );
        prop::collection::vec(fields, n).prop_map(move |f| {
            ids.iter()
                .zip(f)
                .map(|(id, (kind, label, note))| Candidate {
                    node_id: id.clone(),
                    node_kind: kind.parse().unwrap(),
                    label: label.parse().unwrap(),
                    note,
                })
                .collect()
        })
    })
}

fn consistent_plan() -> impl Strategy<Value = Case> {
    (candidates(), any::<bool>()).prop_flat_map(|(offered, navigate)| {
        let ids: Vec<String> = offered.iter().map(|c| c.node_id.clone()).collect();
        let n = ids.len();
        let cited = prop::sample::subsequence(ids.clone(), 1..=n);
        let extra = prop::collection::vec((0..n, prop::sample::select(ACTIONS.to_vec())), 0..4);
        let actions = prop::collection::vec(prop::sample::select(ACTIONS.to_vec()), n);
        let shuffled = Just(offered.clone()).prop_shuffle();
        let reason = "[A-Za-z][A-Za-z ,.]{0,60}";
        (Just(offered), cited, extra, actions, shuffled, reason, any::<u64>()).prop_map(
            move |(offered, cited, extra, actions, shuffled, reason, seed)| {
                let mut steps: Vec<Value> = Vec::new();
                if navigate {
                    for (id, action) in cited.iter().zip(&actions) {
                        steps.push(json!({ "action": action, "nodeId": id, "rationale": "fits" }));
                    }
                    for (i, action) in extra {
                        steps.push(json!({ "action": action, "nodeId": ids[i], "rationale": "context" }));
                    }
                    let len = steps.len();
                    steps.rotate_left((seed as usize) % len);
                }
                let mut plan = plan_over(&serde_json::to_value(&shuffled).unwrap(), "ABSTAIN", &[]);
                if navigate {
                    plan["decision"] = json!("NAVIGATE");
                    plan["steps"] = json!(steps);
                    plan["citedNodeIds"] = json!(cited);
                    plan["abstainReason"] = Value::Null;
                } else {
                    plan["abstainReason"] = json!(reason);
                }
                Case { offered, plan, navigate }
            },
        )
    })
}

fn codes(v: &Verdict) -> BTreeSet<Code> {
    v.codes().into_iter().collect()
}

fn set<const N: usize>(codes: [Code; N]) -> BTreeSet<Code> {
    codes.into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_plan_built_from_offered_candidates_always_passes(case in consistent_plan()) {
        let verdict = gate::check(&case.plan, Some(&case.offered));
        prop_assert!(verdict.valid, "{:?}", verdict);
        prop_assert!(gate::check(&case.plan, None).valid);
    }

    #[test]
    fn a_foreign_id_always_fails_as_not_offered(case in consistent_plan(), in_steps: bool) {
        let mut plan = case.plan.clone();
        let (key, value, side) = if in_steps {
            ("steps", json!({ "action": "CITE", "nodeId": FOREIGN, "rationale": "?" }),
             if case.navigate { None } else { Some(Code::AbstainWithSteps) })
        } else {
            ("citedNodeIds", json!(FOREIGN),
             Some(if case.navigate { Code::CitedNotActedOn } else { Code::AbstainWithCitations }))
        };
        plan[key].as_array_mut().unwrap().push(value);
        let mut expected = set([Code::NotOffered]);
        expected.extend(side);
        prop_assert_eq!(codes(&gate::check(&plan, Some(&case.offered))), expected.clone());
        prop_assert_eq!(codes(&gate::check(&plan, None)), expected);
    }

    #[test]
    fn a_foreign_or_altered_or_missing_candidate_always_fails(case in consistent_plan(), which in 0..3u8) {
        let mut plan = case.plan.clone();
        let cands = plan["candidates"].as_array_mut().unwrap();
        let expected = match which {
            0 => {
                cands.push(json!({ "nodeId": FOREIGN, "nodeKind": "ARTIFACT", "label": "DECLARED", "note": "" }));
                Code::CandidateAdded
            }
            1 => {
                let note = format!("{} (edited)", cands[0]["note"].as_str().unwrap());
                cands[0]["note"] = json!(note);
                Code::CandidateAltered
            }
            _ => {
                cands.pop();
                Code::CandidateMissing
            }
        };
        let mut expected = vec![expected];
        if plan["candidates"].as_array().unwrap().is_empty() {
            // The only candidate is gone: minItems says so too.
            expected.insert(0, Code::Schema);
        }
        prop_assert_eq!(gate::check(&plan, Some(&case.offered)).codes(), expected);
    }

    #[test]
    fn flipping_the_decision_always_fails(case in consistent_plan()) {
        let mut plan = case.plan.clone();
        plan["decision"] = json!(if case.navigate { "ABSTAIN" } else { "NAVIGATE" });
        let expected = if case.navigate {
            set([Code::AbstainWithSteps, Code::AbstainWithCitations, Code::AbstainWithoutReason])
        } else {
            set([Code::NavigateWithReason, Code::NavigateWithoutSteps, Code::NavigateWithoutCitations])
        };
        prop_assert_eq!(codes(&gate::check(&plan, Some(&case.offered))), expected);
    }

    #[test]
    fn nulling_or_setting_the_reason_always_fails(case in consistent_plan()) {
        let mut plan = case.plan.clone();
        let expected = if case.navigate {
            plan["abstainReason"] = json!("no reason");
            Code::NavigateWithReason
        } else {
            plan["abstainReason"] = Value::Null;
            Code::AbstainWithoutReason
        };
        let verdict = gate::check(&plan, Some(&case.offered));
        prop_assert_eq!(verdict.codes(), vec![expected]);
        prop_assert_eq!(verdict.violations[0].path.as_str(), "/abstainReason");
    }
}

// ---------------------------------------------------------------- fuzzing

fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        prop::sample::select(vec![
            "NAVIGATE",
            "ABSTAIN",
            "CITE",
            "tool://a/b",
            "HANDLES_ONLY",
            ""
        ])
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::from),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "nodeId",
                    "decision",
                    "steps",
                    "citedNodeIds",
                    "candidates",
                    "abstainReason",
                    "action",
                    "note",
                    "x",
                ]),
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
        ]
    })
}

/// Every JSON Pointer in `v`.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                pointers(
                    x,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                pointers(x, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// Checks `plan` every way the gate can be called; the verdict is coherent and
/// every pointer it reports exists in the plan.
fn check_all_ways(plan: &Value, offered: &[Candidate]) -> Result<(), TestCaseError> {
    for gate in [
        Gate::default(),
        Gate {
            offered: Some(offered),
            tools: Some(shipped_registry() as &dyn gate::ToolResolver),
        },
    ] {
        let verdict = gate.check(plan);
        prop_assert_eq!(verdict.valid, verdict.violations.is_empty());
        for v in &verdict.violations {
            prop_assert!(
                plan.pointer(&v.path).is_some(),
                "{} not in {}",
                v.path,
                plan
            );
        }
        let feedback = gate::repair_feedback(&verdict);
        prop_assert_eq!(feedback.is_empty(), verdict.valid);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        let verdict = Gate::default().check_str(&text);
        prop_assert!(!verdict.valid || serde_json::from_str::<Value>(&text).is_ok());
        if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
            check_all_ways(&v, &offered("offered-git.json"))?;
        }
    }

    #[test]
    fn arbitrary_json_never_panics(plan in any_json()) {
        check_all_ways(&plan, &offered("offered-chat.json"))?;
    }

    #[test]
    fn any_part_of_a_valid_plan_replaced_by_junk_never_panics(
        case in consistent_plan(),
        pick in any::<prop::sample::Index>(),
        junk in any_json(),
    ) {
        let mut plan = case.plan.clone();
        let mut all = Vec::new();
        pointers(&plan, String::new(), &mut all);
        let at = pick.get(&all).clone();
        *plan.pointer_mut(&at).unwrap() = junk;
        check_all_ways(&plan, &case.offered)?;
    }
}
