//! No function outside tests is over 120 lines: a function that long does
//! several jobs, and each job deserves a name.
//!
//! Every `src/` of the house is parsed with `syn` (not read as text, so a
//! brace inside a string or a multi-line literal cannot fool the count). A
//! function's length is its lines from `fn` to its closing brace, comments
//! and blank lines included: what a reader scrolls through. Its doc comment
//! and attributes are not counted. Unit tests (`#[cfg(test)]` modules,
//! `#[test]` functions and `tests.rs` / `tests/` files) are skipped.

use std::path::Path;

use syn::visit::Visit;

use crate::common::root;

/// The most lines a function may have.
const MAX_LINES: usize = 120;

/// Functions over the limit, `path:line name (n lines)`.
fn long_functions(file: &Path, text: &str) -> Vec<String> {
    let ast = match syn::parse_file(text) {
        Ok(ast) => ast,
        Err(e) => panic!("{}: not Rust that syn parses: {e}", file.display()),
    };
    let mut finder = Finder {
        file,
        long: Vec::new(),
    };
    finder.visit_file(&ast);
    finder.long
}

struct Finder<'a> {
    file: &'a Path,
    long: Vec<String>,
}

impl Finder<'_> {
    fn check(&mut self, name: &syn::Ident, sig: &syn::Signature, body: &syn::Block) {
        let start = sig.fn_token.span.start().line;
        let end = body.brace_token.span.close().end().line;
        let n = end + 1 - start;
        if n > MAX_LINES {
            self.long.push(format!(
                "{}:{start} {name} ({n} lines)",
                self.file.display()
            ));
        }
    }
}

/// `#[cfg(test)]` or `#[test]`/`#[tokio::test]` among `attrs`.
fn is_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        let path = a.path();
        if path.is_ident("cfg") {
            return a.parse_args::<syn::Ident>().is_ok_and(|id| id == "test");
        }
        path.segments.last().is_some_and(|s| s.ident == "test")
    })
}

impl<'ast> Visit<'ast> for Finder<'_> {
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_test(&f.attrs) {
            self.check(&f.sig.ident, &f.sig, &f.block);
            syn::visit::visit_item_fn(self, f);
        }
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_test(&f.attrs) {
            self.check(&f.sig.ident, &f.sig, &f.block);
            syn::visit::visit_impl_item_fn(self, f);
        }
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(body) = &f.default {
            self.check(&f.sig.ident, &f.sig, body);
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

#[test]
fn no_function_outside_tests_is_over_120_lines() {
    let mut dirs = vec![root().join("src")];
    for entry in std::fs::read_dir(root().join("crates")).unwrap() {
        let src = entry.unwrap().path().join("src");
        if src.is_dir() {
            dirs.push(src);
        }
    }
    let mut long = Vec::new();
    for dir in dirs {
        for entry in walkdir::WalkDir::new(&dir) {
            let path = entry.unwrap().into_path();
            let in_tests = path.iter().any(|p| p == "tests" || p == "tests.rs");
            if path.extension().is_none_or(|x| x != "rs") || in_tests {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let rel = path.strip_prefix(root()).unwrap_or(&path);
            long.extend(long_functions(rel, &text));
        }
    }
    long.sort();
    assert!(
        long.is_empty(),
        "split these into functions of one job each: {long:#?}"
    );
}

#[test]
fn the_count_sees_through_strings_and_skips_tests() {
    let body = "    let x = 1;\n".repeat(MAX_LINES);
    let long = format!(
        "/// Doc.\nfn long() {{\n    let s = \"{{ not a brace\n}}\";\n{body}}}\n\
         #[cfg(test)]\nmod tests {{\n    fn also_long() {{\n{body}    }}\n}}\n\
         #[test]\nfn a_test() {{\n{body}}}\n"
    );
    let found = long_functions(Path::new("x.rs"), &long);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("x.rs:2 long ("), "{found:?}");
    let short = format!(
        "fn ok() {{\n{}}}\n",
        "    let x = 1;\n".repeat(MAX_LINES - 2)
    );
    assert!(long_functions(Path::new("y.rs"), &short).is_empty());
}
