//! Loading registries: every format, the shipped tools/, and broken input.

use serde_json::json;
use toolrag::registry::{LoadOptions, Registry, SourceFormat};
use toolrag::Error;

use crate::common::{fixture, jsonl_ids, shipped_tools};

fn load(paths: &[std::path::PathBuf]) -> Result<Registry, Error> {
    Registry::load(paths, &LoadOptions::default())
}

#[test]
fn shipped_registry_has_60_tools_in_8_namespaces() {
    let reg = load(&[shipped_tools()]).unwrap();
    assert!(reg.len() >= 60, "{} tools", reg.len());
    assert!(reg.namespaces().len() >= 8, "{:?}", reg.namespaces());
    for t in reg.tools() {
        assert_eq!(t.id, format!("{}/{}", t.namespace, t.name));
        assert!(!t.examples.is_empty(), "{} has examples", t.id);
        assert!(!t.edge_cases.is_empty(), "{} has edge cases", t.id);
        assert_eq!(t.source.format, SourceFormat::Toml);
        for b in &t.not_for {
            assert!(
                reg.resolve_ref(t, &b.tool).is_some(),
                "{} -> {}",
                t.id,
                b.tool
            );
        }
    }
    assert!(reg.tools().iter().any(|t| t.annotations.is_destructive()));
}

#[test]
fn mcp_tools_list_is_normalised_with_docstring_sections() {
    let reg = load(&[fixture("formats/fs_server.json")]).unwrap();
    let t = reg.get("tool://fs_server/read_file").unwrap();
    assert_eq!(t.source.format, SourceFormat::Mcp);
    assert_eq!(
        t.summary,
        "Read the complete contents of a file from the file system."
    );
    assert_eq!(
        t.description,
        "Read the complete contents of a file from the file system."
    );
    assert_eq!(t.examples[0].arguments, Some(json!({"path": "/etc/hosts"})));
    assert_eq!(t.edge_cases[0].case, "missing file");
    assert_eq!(t.not_for[0].tool, "list_directory");
    assert_eq!(
        t.input_schema["properties"]["path"]["description"],
        "Path of the file."
    );
    assert!(t.annotations.is_read_only());
    assert_eq!(t.title.as_deref(), Some("Read file"));
    // The second tool starts on its own line, so lint can point at it.
    let second = reg.get("fs_server/list_directory").unwrap();
    assert_eq!(second.source.location.line, 10);
}

#[test]
fn openai_arrays_accept_wrapped_and_bare_functions() {
    let reg = load(&[fixture("formats/openai.json")]).unwrap();
    let ids: Vec<&str> = reg.tools().iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["openai/get_weather", "openai/get_time"]);
    assert_eq!(reg.tools()[0].examples[0].request, "weather in Paris?");
}

#[test]
fn namespace_option_overrides_the_file_stem() {
    let opts = LoadOptions {
        namespace: Some("weather".into()),
        ..Default::default()
    };
    let reg = Registry::load(&[fixture("formats/openai.json")], &opts).unwrap();
    assert!(reg.get("weather/get_weather").is_some());
}

#[test]
fn jsonl_keeps_given_ids() {
    let reg = load(&[fixture("formats/lines.jsonl")]).unwrap();
    assert!(reg.get("math.sum#283188eb").is_some());
    assert!(reg.get("lines/no_id_tool").is_some());
    assert_eq!(reg.get("lines/no_id_tool").unwrap().source.location.line, 2);
}

#[test]
fn a_jsonl_dataset_loads_with_its_ids() {
    let path = fixture("jsonl/tools.jsonl");
    let reg = load(std::slice::from_ref(&path)).unwrap();
    // Every line is one tool under the id it was given, in file order.
    let ids = jsonl_ids(&path);
    assert_eq!(ids.len(), 11);
    let got: Vec<&str> = reg.tools().iter().map(|t| t.id.as_str()).collect();
    assert_eq!(got, ids);
    for (i, t) in reg.tools().iter().enumerate() {
        assert_eq!(t.source.format, SourceFormat::Jsonl, "{}", t.id);
        assert_eq!(t.source.location.line as usize, i + 1, "{}", t.id);
    }
    // One name, two functions: both load, each under its own id.
    let weather: Vec<&str> = reg
        .named("get_current_weather")
        .map(|t| t.id.as_str())
        .collect();
    assert_eq!(
        weather,
        [
            "get_current_weather#5b7e21d4",
            "get_current_weather#c94a06f2"
        ]
    );
    // A dotted name is kept whole, with its parameters.
    let gcd = reg.get("math.gcd#7d2e4b19").unwrap();
    assert_eq!(gcd.name, "math.gcd");
    assert!(gcd.is_required("a") && gcd.is_required("b"));
    // `"parameters": null` is a tool without arguments.
    assert_eq!(
        reg.get("list_models#2b4d6f80").unwrap().input_schema,
        json!({"type": "object"})
    );
}

fn errors_of(paths: &[std::path::PathBuf]) -> Vec<String> {
    let (_, errors) = Registry::load_lenient(paths, &LoadOptions::default());
    errors.iter().map(|e| e.to_string()).collect()
}

fn has(errors: &[String], needle: &str) -> bool {
    errors.iter().any(|e| e.contains(needle))
}

#[test]
fn broken_files_are_all_reported_with_file_and_line() {
    let errors = errors_of(&[fixture("broken")]);
    let want = [
        "invalid_toml.toml:3:28: invalid TOML",
        "wrong_type.toml:6:1: invalid tool definition at `examples[0].request`",
        "dup_b.toml:1:1: duplicate tool id `ns/dup` (first defined at",
        "unknown_key.toml:4:1: invalid tool definition",
        "bad_utf8.toml:2:15: invalid UTF-8",
        "not_a_registry.json:1:1: unknown format",
        "lines.jsonl:2:81: invalid JSON: expected `,` or `}`",
        "lines.jsonl:4:1: invalid tool definition at `name`",
    ];
    for w in want {
        assert!(has(&errors, w), "missing {w:?} in {errors:#?}");
    }
    assert_eq!(errors.len(), want.len(), "{errors:#?}");
    // The good lines of a partly broken file still load.
    let (reg, _) = Registry::load_lenient(&[fixture("broken")], &LoadOptions::default());
    assert!(reg.get("ok_one").is_some() && reg.get("ok_three").is_some());
}

#[test]
fn an_unknown_extension_named_explicitly_is_an_error() {
    let errors = errors_of(&[fixture("broken/tool.yaml")]);
    assert!(has(&errors, "tool.yaml:1:1: unknown format"), "{errors:?}");
}

#[test]
fn an_empty_folder_and_a_missing_path_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let errors = errors_of(&[dir.path().to_path_buf(), dir.path().join("nope")]);
    assert!(has(&errors, "no tool files"), "{errors:?}");
    assert!(has(&errors, "nope:1:1: cannot read"), "{errors:?}");
}
