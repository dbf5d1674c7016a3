//! Who may see and call what: the `[[gateway.policy]]` entries, compiled.
//!
//! With no entry at all, every principal sees every tool (as a one-person
//! gateway always did). Once there is one, a principal sees the union of the
//! tools of the entries that name it, and a principal that none names sees
//! nothing. A tool a principal may not see never reaches them: not in a
//! search, not as a card, not as a call, not in an error message.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use toolrag_auth::Principal;
use toolrag_core::error::Result;
use toolrag_core::settings::invalid;

/// One `[[gateway.policy]]` entry: what some principals may see and call.
///
/// ```toml
/// [[gateway.policy]]
/// principals = ["bob", "group:support"]
/// tools = ["shop/list_orders", "time/*"]
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
#[non_exhaustive]
pub struct PolicyRule {
    /// Whom it is about: token names, JWT subjects or client ids, or
    /// `group:<value>` for a value of the group claim.
    pub principals: Vec<String>,
    /// Globs over `<server>/<tool>`: the tools they may see and call.
    pub tools: Vec<String>,
    /// Tools (`server/tool`, `server`, or globs) these principals may run
    /// without asking a person, on top of `[gateway] allow`.
    #[serde(default)]
    pub allow: Vec<String>,
}

/// The compiled `[[gateway.policy]]` entries.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    rules: Vec<Rule>,
}

#[derive(Debug, Clone)]
struct Rule {
    principals: Vec<String>,
    tools: GlobSet,
    allow: GlobSet,
    allow_src: Vec<String>,
}

impl Policy {
    /// Compiles the entries; an entry without principals or tools, or a
    /// glob that does not parse, is an error naming it.
    pub fn compile(rules: &[PolicyRule]) -> Result<Policy> {
        let mut out = Vec::with_capacity(rules.len());
        for (i, r) in rules.iter().enumerate() {
            let key = format!("gateway.policy[{i}]");
            if r.principals.is_empty() {
                return Err(invalid(
                    &key,
                    format!(
                        "`{key}.principals` is empty: name token names, subjects, client ids or \
                         `group:<value>`"
                    ),
                ));
            }
            if let Some(p) = r
                .principals
                .iter()
                .find(|p| p.trim().is_empty() || *p == "group:")
            {
                return Err(invalid(
                    &key,
                    format!("`{key}.principals` has an empty entry `{p}`"),
                ));
            }
            let tools = globs(&format!("{key}.tools"), &r.tools)?;
            let allow = globs(&format!("{key}.allow"), &r.allow)?;
            out.push(Rule {
                principals: r.principals.clone(),
                tools,
                allow,
                allow_src: r.allow.clone(),
            });
        }
        Ok(Policy { rules: out })
    }

    /// Whether there is no policy, so that everyone sees everything.
    pub fn is_open(&self) -> bool {
        self.rules.is_empty()
    }

    fn rules_for<'a>(&'a self, who: &'a Principal) -> impl Iterator<Item = &'a Rule> + 'a {
        self.rules
            .iter()
            .filter(move |r| r.principals.iter().any(|p| who.matches(p)))
    }

    /// Whether `who` may see and call the tool `id` (`<server>/<tool>`).
    pub fn may_see(&self, who: &Principal, id: &str) -> bool {
        self.is_open() || self.rules_for(who).any(|r| r.tools.is_match(id))
    }

    /// The entry of a policy that names `who` and lets `id` run without
    /// asking a person, as `policy: <glob>`.
    pub fn allow_entry(&self, who: &Principal, id: &str) -> Option<String> {
        self.rules_for(who).find_map(|r| {
            r.allow
                .matches(id)
                .first()
                .map(|&i| format!("policy: {}", r.allow_src[i]))
        })
    }
}

/// A glob set over tool ids, each pattern as [`tool_glob`] reads it.
fn globs(key: &str, patterns: &[String]) -> Result<GlobSet> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        b.add(tool_glob(key, p)?);
    }
    b.build().map_err(|e| invalid(key, format!("`{key}`: {e}")))
}

/// A glob over tool ids (`<server>/<tool>`) as the gateway's tables write
/// it: a bare server name `s` means `s/*`, and `*` does not cross `/`. An
/// error names the setting `key`.
pub(crate) fn tool_glob(key: &str, pattern: &str) -> Result<Glob> {
    let p = pattern.trim();
    let full = if p.contains('/') || p.contains('*') {
        p.to_string()
    } else {
        format!("{p}/*")
    };
    GlobBuilder::new(&full)
        .literal_separator(true)
        .build()
        .map_err(|e| invalid(key, format!("`{key}`: `{p}` is not a glob: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(principals: &[&str], tools: &[&str]) -> PolicyRule {
        PolicyRule {
            principals: principals.iter().map(|s| s.to_string()).collect(),
            tools: tools.iter().map(|s| s.to_string()).collect(),
            allow: vec!["shop/refund".into()],
        }
    }

    #[test]
    fn open_without_rules_and_closed_for_the_unnamed() {
        let alice = Principal::token("alice");
        assert!(Policy::default().may_see(&alice, "shop/refund"));
        let p = Policy::compile(&[rule(&["bob"], &["shop/list_orders"])]).unwrap();
        assert!(!p.may_see(&alice, "shop/list_orders"));
        let bob = Principal::token("bob");
        assert!(p.may_see(&bob, "shop/list_orders"));
        assert!(!p.may_see(&bob, "shop/refund"));
        assert_eq!(
            p.allow_entry(&bob, "shop/refund").as_deref(),
            Some("policy: shop/refund")
        );
        assert_eq!(p.allow_entry(&alice, "shop/refund"), None);
    }

    #[test]
    fn groups_servers_and_globs() {
        let mut carol = Principal::token("carol");
        carol.groups = vec!["support".into()];
        let p = Policy::compile(&[rule(&["group:support"], &["time", "shop/get_*"])]).unwrap();
        assert!(p.may_see(&carol, "time/get_current_time"));
        assert!(p.may_see(&carol, "shop/get_order"));
        assert!(!p.may_see(&carol, "shop/list_orders"));
        assert!(!p.may_see(&carol, "timer/x"));
    }

    #[test]
    fn errors_name_the_entry() {
        let e = Policy::compile(&[rule(&[], &["x"])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("gateway.policy[0].principals"), "{e}");
        let e = Policy::compile(&[rule(&["a"], &["shop/[x"])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("gateway.policy[0].tools"), "{e}");
    }
}
