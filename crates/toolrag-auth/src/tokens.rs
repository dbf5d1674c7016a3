//! Static bearer tokens from a file: `name:token` a line, or
//! `name:sha256:<64 hex>` with the token stored hashed.

use std::path::Path;

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::{AuthError, ConfigError, Principal};

/// The shortest token accepted in a tokens file: a guessable token is a
/// hole, not a credential.
const MIN_TOKEN_CHARS: usize = 16;

/// The tokens of a tokens file, each kept only as its SHA-256, so a token
/// is never held, logged or compared in clear.
#[derive(Clone)]
pub struct StaticTokens {
    /// (name, SHA-256 of the token).
    entries: Vec<(String, [u8; 32])>,
}

impl std::fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTokens")
            .field("names", &self.names().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl StaticTokens {
    /// Reads a tokens file. Blank lines and lines starting with `#` are
    /// skipped; every other line is `name:token` or `name:sha256:<hex>`.
    /// A name is letters, digits, `.`, `_`, `@` and `-`; names are unique.
    pub fn load(path: &Path) -> Result<StaticTokens, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|(line, message)| ConfigError::Line {
            path: path.to_path_buf(),
            line,
            message,
        })
    }

    /// Parses the text of a tokens file; an error is (line, message).
    pub fn parse(text: &str) -> Result<StaticTokens, (usize, String)> {
        let mut entries: Vec<(String, [u8; 32])> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let n = i + 1;
            let Some((name, secret)) = line.split_once(':') else {
                return Err((
                    n,
                    "expected `name:token` or `name:sha256:<64 hex digits>`".into(),
                ));
            };
            let name = name.trim();
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'))
            {
                return Err((
                    n,
                    format!(
                        "the name `{name}` must be letters, digits, `.`, `_`, `@` or `-` (it is \
                         what policies and audit lines call this token)"
                    ),
                ));
            }
            if name.starts_with("group") && name.contains(':') {
                return Err((n, "a token name cannot start with `group:`".into()));
            }
            let digest = if let Some(hexed) = secret.strip_prefix("sha256:") {
                let bytes = hex::decode(hexed.trim()).ok().filter(|b| b.len() == 32);
                let Some(bytes) = bytes else {
                    return Err((
                        n,
                        format!(
                            "`{name}`: after `sha256:` comes the token's SHA-256 as 64 hex \
                             digits (`printf %s TOKEN | sha256sum`)"
                        ),
                    ));
                };
                let mut d = [0u8; 32];
                d.copy_from_slice(&bytes);
                d
            } else {
                let token = secret.trim();
                if token.chars().count() < MIN_TOKEN_CHARS {
                    return Err((
                        n,
                        format!(
                            "`{name}`: the token is shorter than {MIN_TOKEN_CHARS} characters; \
                             make one with `openssl rand -hex 24`"
                        ),
                    ));
                }
                Sha256::digest(token.as_bytes()).into()
            };
            if entries.iter().any(|(other, _)| other == name) {
                return Err((n, format!("the name `{name}` is used twice")));
            }
            entries.push((name.to_string(), digest));
        }
        Ok(StaticTokens { entries })
    }

    /// The token names, in file order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|(n, _)| n.as_str())
    }

    /// Whether the file has no tokens.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The principal whose token `token` is. Every entry is compared, in
    /// constant time, so the time taken says nothing about which matched.
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let given: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = None;
        for (name, digest) in &self.entries {
            if bool::from(given.ct_eq(digest)) {
                found = Some(name);
            }
        }
        found
            .map(|name| Principal::token(name.clone()))
            .ok_or_else(|| AuthError::Invalid("no such token".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_hashed() {
        let hashed = hex::encode(Sha256::digest(b"bob-token-0123456789"));
        let text = format!("# team\nalice:alice-token-0123456789\n\nbob:sha256:{hashed}\n");
        let t = StaticTokens::parse(&text).unwrap();
        assert_eq!(t.names().collect::<Vec<_>>(), ["alice", "bob"]);
        assert_eq!(t.verify("alice-token-0123456789").unwrap().name, "alice");
        assert_eq!(t.verify("bob-token-0123456789").unwrap().name, "bob");
        assert!(matches!(t.verify("nope"), Err(AuthError::Invalid(_))));
        assert!(!format!("{t:?}").contains("alice-token"));
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(StaticTokens::parse("\n\nalice").unwrap_err().0, 3);
        assert!(StaticTokens::parse("a:short")
            .unwrap_err()
            .1
            .contains("shorter"));
        assert!(StaticTokens::parse("a:sha256:xyz")
            .unwrap_err()
            .1
            .contains("64 hex"));
        let dup = "a:0123456789abcdef0\na:0123456789abcdef1";
        assert!(StaticTokens::parse(dup).unwrap_err().1.contains("twice"));
        assert!(StaticTokens::parse("b c:0123456789abcdef0").is_err());
    }
}
