use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use crate::schema;
use toolrag_core::registry::ToolDef;

declare_rule! {
    /// ## What it does
    /// Finds parameters that hold a filesystem path, by name (`path`,
    /// `repo_path`, `output_dir`, `source_file`) or by description ("the file
    /// path of ..."), and reports those whose schema accepts relative paths.
    /// One-word endpoint names (`source`, `destination`, `target`) count as
    /// paths on a tool whose name says it works on files (`move_file`).
    ///
    /// A path beside a base path parameter of the same object (`files` beside
    /// `repo_path` in `git_add`) is relative to that base by design, which is
    /// sound: only the base must be absolute.
    ///
    /// A schema only accepts absolute paths with `format = "absolute-path"`
    /// (a toolrag format: starts with `/`), a `pattern` anchored at `^/`, or an
    /// `enum` of absolute paths. For arrays of paths the `items` are checked.
    ///
    /// ## Why is this bad?
    /// This is a poka-yoke: make the wrong call impossible rather than
    /// unlikely. A relative path is resolved against a working directory the
    /// model cannot see and that differs between the host, the server and the
    /// sandbox. `notes.txt` reads one file in a test and another in
    /// production; `../config` can walk out of the intended tree. Saying
    /// "absolute path" in the description is not enough: the schema is what
    /// validation checks.
    ///
    /// ## Example
    /// ```toml
    /// [input_schema.properties.path]
    /// type = "string"
    /// description = "Path of the file to read."
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// [input_schema.properties.path]
    /// type = "string"
    /// format = "absolute-path"
    /// pattern = "^/"
    /// description = "Absolute path of the file to read, like /etc/hosts."
    /// ```
    pub(crate) struct RelativePathParameter {
        code: "TR005",
        name: "relative-path-parameter",
        level: Error,
        summary: "A path parameter accepts relative paths; the schema must require absolute ones.",
    }
}

impl Rule for RelativePathParameter {
    fn check_tool<'t>(&self, tool: &'t ToolDef, _cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        let all = schema::properties(tool);
        for p in schema::path_properties(tool) {
            let Some(strings) = p.string_schema() else {
                continue;
            };
            // Paths relative to a base given beside them (git_add's files,
            // relative to repo_path) are sound: the base is what is checked.
            if schema::base_beside(&all, &p).is_some() {
                continue;
            }
            if !schema::is_absolute_only(strings) {
                let what = if std::ptr::eq(strings, p.schema) {
                    "it"
                } else {
                    "its items"
                };
                out.push(
                    tool,
                    p.pointer.clone(),
                    format!(
                        "path parameter `{}` accepts relative paths; constrain {what} with format = \"absolute-path\" or pattern = \"^/\"",
                        p.name
                    ),
                );
            }
        }
    }
}
