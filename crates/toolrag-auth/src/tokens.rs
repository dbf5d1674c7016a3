//! Static bearer tokens from a file: `name:token` a line, or
//! `name:sha256:<64 hex>` with the token stored hashed. The file can be read
//! again while the server runs ([`StaticTokens::reload`]), so that a token
//! taken out of it stops working without a restart.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::{AuthError, ConfigError, Principal};

/// The shortest token accepted in a tokens file: a guessable token is a
/// hole, not a credential.
const MIN_TOKEN_CHARS: usize = 16;

/// The SHA-256 of a bearer token: how a tokens file, its reloads
/// ([`RemovedToken`]) and a store of revoked tokens know a token without
/// holding it.
pub fn token_digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// (name, SHA-256 of the token), in file order.
type Entries = Vec<(String, [u8; 32])>;

/// The tokens of a tokens file, each kept only as its SHA-256, so a token
/// is never held, logged or compared in clear.
///
/// Clones share the tokens: a [`reload`](StaticTokens::reload) through one
/// is seen by all, at once, by the next request each checks.
#[derive(Clone)]
pub struct StaticTokens {
    entries: Arc<ArcSwap<Entries>>,
    /// The file they were loaded from, to be read again.
    path: Option<PathBuf>,
}

/// A token that a reload took away (its line is gone, or its name now has
/// another token): what a store of revoked tokens needs to refuse it on
/// other replicas too, without the token itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemovedToken {
    /// The name it had (the principal).
    pub name: String,
    /// The SHA-256 of the token.
    pub sha256: [u8; 32],
}

impl RemovedToken {
    /// The SHA-256 as 64 lower-case hex digits (as `name:sha256:<hex>` lines
    /// write it).
    pub fn sha256_hex(&self) -> String {
        hex::encode(self.sha256)
    }
}

/// What a reload changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TokensReloaded {
    /// Tokens no longer accepted.
    pub removed: Vec<RemovedToken>,
    /// Names whose token is new (a new line, or a new token for a name).
    pub added: Vec<String>,
    /// How many tokens the file holds now.
    pub count: usize,
}

impl TokensReloaded {
    /// Whether nothing changed.
    pub fn is_unchanged(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty()
    }
}

impl std::fmt::Debug for StaticTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTokens")
            .field("names", &self.names())
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl StaticTokens {
    /// Reads a tokens file. Blank lines and lines starting with `#` are
    /// skipped; every other line is `name:token` or `name:sha256:<hex>`.
    /// A name is letters, digits, `.`, `_`, `@` and `-`; names are unique.
    pub fn load(path: &Path) -> Result<StaticTokens, ConfigError> {
        let entries = read(path)?;
        Ok(StaticTokens {
            entries: Arc::new(ArcSwap::from_pointee(entries)),
            path: Some(path.to_path_buf()),
        })
    }

    /// The file the tokens were loaded from ([`StaticTokens::load`]).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Reads the file again and, when it is readable, well formed and holds
    /// at least one token, puts its tokens in place of the old ones (for
    /// every clone), and says which tokens went away. Otherwise the old
    /// tokens stay, and the error names the file (and the line).
    pub fn reload(&self) -> Result<TokensReloaded, ConfigError> {
        let Some(path) = &self.path else {
            return Ok(TokensReloaded {
                count: self.entries.load().len(),
                ..TokensReloaded::default()
            });
        };
        let new = read(path)?;
        if new.is_empty() {
            return Err(ConfigError::Invalid(format!(
                "{}: no token in the file (a server needs at least one)",
                path.display()
            )));
        }
        let old = self.entries.load_full();
        let has = |set: &Entries, (name, digest): &(String, [u8; 32])| {
            set.iter().any(|(n, d)| n == name && d == digest)
        };
        let removed = old
            .iter()
            .filter(|e| !has(&new, e))
            .map(|(name, sha256)| RemovedToken {
                name: name.clone(),
                sha256: *sha256,
            })
            .collect();
        let added = new
            .iter()
            .filter(|e| !has(&old, e))
            .map(|(name, _)| name.clone())
            .collect();
        let count = new.len();
        self.entries.store(Arc::new(new));
        Ok(TokensReloaded {
            removed,
            added,
            count,
        })
    }

    /// Parses the text of a tokens file; an error is (line, message).
    pub fn parse(text: &str) -> Result<StaticTokens, (usize, String)> {
        Ok(StaticTokens {
            entries: Arc::new(ArcSwap::from_pointee(parse_entries(text)?)),
            path: None,
        })
    }

    /// The token names, in file order.
    pub fn names(&self) -> Vec<String> {
        self.entries.load().iter().map(|(n, _)| n.clone()).collect()
    }

    /// Whether the file has no tokens.
    pub fn is_empty(&self) -> bool {
        self.entries.load().is_empty()
    }

    /// The principal whose token `token` is. Every entry is compared, in
    /// constant time, so the time taken says nothing about which matched.
    pub fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let given = token_digest(token);
        let entries = self.entries.load();
        let mut found = None;
        for (name, digest) in entries.iter() {
            if bool::from(given.ct_eq(digest)) {
                found = Some(name);
            }
        }
        found
            .map(|name| Principal::token(name.clone()))
            .ok_or_else(|| AuthError::Invalid("no such token".into()))
    }
}

/// The entries of the file at `path`.
fn read(path: &Path) -> Result<Entries, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_entries(&text).map_err(|(line, message)| ConfigError::Line {
        path: path.to_path_buf(),
        line,
        message,
    })
}

/// The entries of the text of a tokens file; an error is (line, message).
fn parse_entries(text: &str) -> Result<Entries, (usize, String)> {
    let mut entries: Entries = Vec::new();
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
            token_digest(token)
        };
        if entries.iter().any(|(other, _)| other == name) {
            return Err((n, format!("the name `{name}` is used twice")));
        }
        entries.push((name.to_string(), digest));
    }
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_hashed() {
        let hashed = hex::encode(Sha256::digest(b"bob-token-0123456789"));
        let text = format!("# team\nalice:alice-token-0123456789\n\nbob:sha256:{hashed}\n");
        let t = StaticTokens::parse(&text).unwrap();
        assert_eq!(t.names(), ["alice", "bob"]);
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

    #[test]
    fn a_reload_swaps_the_tokens_for_every_clone_and_keeps_them_on_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokens");
        let alice = "alice-token-0123456789";
        std::fs::write(&path, format!("alice:{alice}\nbob:bob-token-0123456789\n")).unwrap();
        let t = StaticTokens::load(&path).unwrap();
        let shared = t.clone();
        std::fs::write(
            &path,
            format!("alice:{alice}\ncarol:carol-token-0123456789\n"),
        )
        .unwrap();
        let r = t.reload().unwrap();
        assert_eq!(r.count, 2);
        assert_eq!(r.added, ["carol"]);
        assert_eq!(r.removed.len(), 1);
        assert_eq!(r.removed[0].name, "bob");
        assert_eq!(
            r.removed[0].sha256_hex(),
            hex::encode(Sha256::digest(b"bob-token-0123456789"))
        );
        assert!(
            shared.verify("bob-token-0123456789").is_err(),
            "the clone sees it"
        );
        assert_eq!(
            shared.verify("carol-token-0123456789").unwrap().name,
            "carol"
        );
        assert!(t.reload().unwrap().is_unchanged());

        // A broken, an empty or a missing file keeps the tokens there are.
        std::fs::write(&path, format!("alice:{alice}\nbroken\n")).unwrap();
        let e = t.reload().unwrap_err().to_string();
        assert!(e.contains("tokens:2:"), "{e}");
        std::fs::write(&path, "# nobody\n").unwrap();
        assert!(t.reload().unwrap_err().to_string().contains("no token"));
        std::fs::remove_file(&path).unwrap();
        assert!(t.reload().is_err());
        assert_eq!(shared.verify(alice).unwrap().name, "alice");
        assert!(StaticTokens::parse("a:0123456789abcdef0")
            .unwrap()
            .reload()
            .unwrap()
            .is_unchanged());
    }
}
