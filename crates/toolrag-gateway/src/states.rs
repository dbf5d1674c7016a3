//! Approval states of protocol 2026-07-28 (MRTR): sealed, bound to one call,
//! used once.
//!
//! On 2026-07-28 a call that needs a person's approval is answered with
//! `resultType: "input_required"`: an elicitation for the client to put to
//! the person, and a `requestState` that the client sends back with the
//! answer. The state is the gateway's memory of what was shown to the
//! person, kept by the client, so it must be:
//! - **sealed**: HMAC-SHA256 with a per-gateway key (rmcp's
//!   [`RequestStateCodec`]), so that a client cannot forge or alter one;
//! - **bound**: to the principal, the tool, the pinned hash of the tool's
//!   definition and the digest of the arguments, so that an approval of one
//!   call does not approve another, nor the same call after the tool's
//!   definition changed;
//! - **short-lived**: it expires (`[gateway] approval-ttl-seconds`);
//! - **used once**: its nonce is recorded when it is redeemed, and a second
//!   redemption is refused: in a SQLite file that the replicas of one host
//!   share, or, with `[gateway] state` on Redis, as a key that expires
//!   with the state (`SET NX EXAT`, atomic across replicas). The key file
//!   is shared too, so any replica can finish an approval that another
//!   started, and none can be fooled by a replay. When the store cannot be
//!   reached, the approval is refused: a replay cannot be ruled out.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rmcp::model::{RequestStateCodec, RequestStateError, SealOptions};
use rusqlite::{Connection, ErrorCode};
use serde::{Deserialize, Serialize};

use super::GatewayError;
use toolrag_mcp::shared::{Redeemed, SharedState};

/// The key's size in bytes (HMAC-SHA256's block-size-independent minimum
/// for full strength is 32).
const KEY_BYTES: usize = 32;

/// What a sealed state says: the call it approves and when it stops being
/// valid. Signed, not encrypted: nothing secret goes in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Sealed {
    /// A random value, recorded when the state is redeemed.
    n: String,
    /// The principal's key ([`principal_key`]).
    p: String,
    /// The tool's id.
    t: String,
    /// The pinned hash of the tool's definition.
    d: String,
    /// sha256 of the arguments' canonical JSON.
    a: String,
    /// When it expires, Unix seconds (also inside the seal's own TTL).
    e: u64,
    /// When it was issued, Unix milliseconds (0 in a state sealed before
    /// there was this field: then `e` less the TTL).
    #[serde(default)]
    i: u64,
}

/// The call an approval is about: who, which tool as pinned, which
/// arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Binding {
    pub(super) principal: String,
    pub(super) tool: String,
    pub(super) definition: String,
    pub(super) arguments: String,
}

/// Why a state is refused; the message is for the model and the audit log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum StateRefusal {
    /// Not sealed by this gateway's key, or altered.
    #[error(
        "the requestState is not one this gateway issued, or it was altered; the call was not \
         made. Call the tool again without requestState to ask for a new approval."
    )]
    Tampered,
    /// Past its time.
    #[error(
        "the approval has expired (approvals are valid for {ttl} s); the call was not made. \
         Call the tool again to ask for a new approval."
    )]
    Expired {
        /// The validity, seconds.
        ttl: u64,
    },
    /// Already redeemed once.
    #[error(
        "this approval was already used; an approval runs its call once. The call was not made \
         again."
    )]
    Replayed,
    /// Issued for another call.
    #[error(
        "this approval was given for {what}; the call was not made. Call the tool again to ask \
         for an approval of this call."
    )]
    Retargeted {
        /// What differs, in words.
        what: &'static str,
    },
    /// The memory of used states was reset after the state was issued
    /// (Redis restarted empty), so a replay cannot be ruled out.
    #[error(
        "the gateway's memory of used approvals was reset after this approval was asked, so a \
         replay cannot be ruled out; the call was not made. Call the tool again to ask for a new \
         approval."
    )]
    Forgotten,
    /// The memory of used states cannot be read or written, so a replay
    /// cannot be ruled out.
    #[error("the gateway cannot record that this approval was used ({0}); the call was not made")]
    Store(String),
}

/// Where used states are remembered.
enum Used {
    /// A SQLite file (one host).
    Sqlite {
        conn: Arc<Mutex<Connection>>,
        db: PathBuf,
    },
    /// The shared state on Redis.
    Shared(SharedState),
}

impl std::fmt::Debug for Used {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Used::Sqlite { db, .. } => write!(f, "sqlite {}", db.display()),
            Used::Shared(s) => write!(f, "{s:?}"),
        }
    }
}

/// Seals and redeems approval states.
pub(super) struct ApprovalStates {
    codec: RequestStateCodec,
    ttl: Duration,
    used: Used,
}

impl std::fmt::Debug for ApprovalStates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalStates")
            .field("ttl", &self.ttl)
            .field("used", &self.used)
            .finish_non_exhaustive()
    }
}

impl ApprovalStates {
    /// The key of `key_file` (created, 0600, when missing) and the store of
    /// used states: `shared` when it is on Redis, else the SQLite file `db`
    /// (created when missing).
    pub(super) fn open(
        key_file: &Path,
        db: &Path,
        ttl: Duration,
        shared: &SharedState,
    ) -> Result<Self, GatewayError> {
        let key = load_or_create_key(key_file)?;
        let codec = RequestStateCodec::try_new(key).map_err(|e| GatewayError::Io {
            path: key_file.to_path_buf(),
            source: std::io::Error::other(e.to_string()),
        })?;
        let used = if shared.is_shared() {
            Used::Shared(shared.clone())
        } else {
            let conn = open_store(db).map_err(|e| GatewayError::Io {
                path: db.to_path_buf(),
                source: std::io::Error::other(e.to_string()),
            })?;
            Used::Sqlite {
                conn: Arc::new(Mutex::new(conn)),
                db: db.to_path_buf(),
            }
        };
        Ok(ApprovalStates { codec, ttl, used })
    }

    /// A sealed state approving the call `b`, valid for the TTL.
    pub(super) fn seal(&self, b: &Binding) -> String {
        let mut nonce = [0u8; 16];
        getrandom::fill(&mut nonce).expect("the OS has randomness");
        let sealed = Sealed {
            n: hex::encode(nonce),
            p: b.principal.clone(),
            t: b.tool.clone(),
            d: b.definition.clone(),
            a: b.arguments.clone(),
            e: now_secs() + self.ttl.as_secs(),
            i: now_millis(),
        };
        self.codec
            .seal_json_with(&sealed, &SealOptions::new().ttl(self.ttl))
            .expect("a plain struct serialises")
    }

    /// Checks `state` against the call `b` and records it as used. Refused
    /// when it is not sealed by this key, has expired, was issued for
    /// another call, or was used before. Only a state that passes every
    /// check is recorded, and then it never passes again.
    pub(super) async fn redeem(&self, state: &str, b: &Binding) -> Result<(), StateRefusal> {
        let sealed: Sealed = self.codec.open_json(state).map_err(|e| match e {
            RequestStateError::Expired => StateRefusal::Expired {
                ttl: self.ttl.as_secs(),
            },
            _ => StateRefusal::Tampered,
        })?;
        if sealed.e < now_secs() {
            return Err(StateRefusal::Expired {
                ttl: self.ttl.as_secs(),
            });
        }
        let what = if sealed.p != b.principal {
            Some("another principal")
        } else if sealed.t != b.tool {
            Some("another tool")
        } else if sealed.a != b.arguments {
            Some("other arguments")
        } else if sealed.d != b.definition {
            Some("the tool as it was defined before its definition changed")
        } else {
            None
        };
        if let Some(what) = what {
            return Err(StateRefusal::Retargeted { what });
        }
        match &self.used {
            Used::Sqlite { conn, .. } => {
                let conn = conn.clone();
                tokio::task::spawn_blocking(move || record_use(&conn, &sealed.n, sealed.e))
                    .await
                    .map_err(|e| StateRefusal::Store(e.to_string()))?
            }
            Used::Shared(shared) => {
                let issued_ms = match sealed.i {
                    0 => sealed.e.saturating_sub(self.ttl.as_secs()) * 1000,
                    ms => ms,
                };
                match shared.mark_used(&sealed.n, issued_ms, sealed.e).await {
                    Ok(Redeemed::First) => Ok(()),
                    Ok(Redeemed::Replayed) => Err(StateRefusal::Replayed),
                    Ok(Redeemed::Forgotten) => Err(StateRefusal::Forgotten),
                    Err(e) => Err(StateRefusal::Store(e.to_string())),
                }
            }
        }
    }
}

fn now_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Inserts the nonce; a nonce already there is a replay. Expired nonces
/// are swept now and then: their states no longer open anyway.
fn record_use(used: &Mutex<Connection>, nonce: &str, expires: u64) -> Result<(), StateRefusal> {
    let conn = used
        .lock()
        .map_err(|_| StateRefusal::Store("the store's lock is poisoned".into()))?;
    let expires = i64::try_from(expires).unwrap_or(i64::MAX);
    match conn.execute(
        "INSERT INTO used_states (nonce, expires) VALUES (?1, ?2)",
        rusqlite::params![nonce, expires],
    ) {
        Ok(_) => {}
        Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::ConstraintViolation => {
            return Err(StateRefusal::Replayed)
        }
        Err(e) => return Err(StateRefusal::Store(e.to_string())),
    }
    if nonce.ends_with('0') {
        let now = i64::try_from(now_secs()).unwrap_or(i64::MAX);
        if let Err(e) = conn.execute("DELETE FROM used_states WHERE expires < ?1", [now]) {
            tracing::warn!("cannot sweep expired approval states: {e}");
        }
    }
    Ok(())
}

fn open_store(db: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(db)?;
    // Several processes share the file: wait for each other's writes
    // rather than fail, and commit durably (a recorded use survives a
    // crash, so a replay after a restart is still refused).
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS used_states (
             nonce TEXT PRIMARY KEY NOT NULL,
             expires INTEGER NOT NULL
         ) WITHOUT ROWID;",
    )?;
    Ok(conn)
}

/// Reads the key, or creates it (random, hex, mode 0600) when the file does
/// not exist. Two replicas starting at once both end up with the one that
/// was written first: the file appears whole or not at all.
fn load_or_create_key(path: &Path) -> Result<Vec<u8>, GatewayError> {
    let io = |source: std::io::Error| GatewayError::Io {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => return parse_key(path, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(e)),
    }
    let mut key = [0u8; KEY_BYTES];
    getrandom::fill(&mut key).map_err(|e| io(std::io::Error::other(e.to_string())))?;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".toolrag-key")
        .permissions(private())
        .tempfile_in(dir)
        .map_err(io)?;
    std::io::Write::write_all(&mut tmp, format!("{}\n", hex::encode(key)).as_bytes())
        .map_err(io)?;
    tmp.as_file().sync_all().map_err(io)?;
    match tmp.persist_noclobber(path) {
        Ok(_) => {
            tracing::info!("created the approval key {}", path.display());
            Ok(key.to_vec())
        }
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(path).map_err(io)?;
            parse_key(path, &text)
        }
        Err(e) => Err(io(e.error)),
    }
}

#[cfg(unix)]
fn private() -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(0o600)
}

#[cfg(not(unix))]
fn private() -> std::fs::Permissions {
    std::fs::metadata(".")
        .map(|m| m.permissions())
        .unwrap_or_else(|_| unreachable!())
}

fn parse_key(path: &Path, text: &str) -> Result<Vec<u8>, GatewayError> {
    match hex::decode(text.trim()) {
        Ok(k) if k.len() >= KEY_BYTES => Ok(k),
        _ => Err(GatewayError::LockFile {
            location: toolrag_core::error::Location::file_start(path),
            message: format!(
                "not an approval key: it must hold at least {KEY_BYTES} random bytes in hex; \
                 delete it to have a new one made (approvals in flight are then refused)"
            ),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> SharedState {
        SharedState::local()
    }

    fn binding() -> Binding {
        Binding {
            principal: "token:bob".into(),
            tool: "shop/refund".into(),
            definition: "d1".into(),
            arguments: "a1".into(),
        }
    }

    #[tokio::test]
    async fn once_bound_and_shared() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("gw.key");
        let db = dir.path().join("used.sqlite");
        let a = ApprovalStates::open(&key, &db, Duration::from_secs(600), &local()).unwrap();
        // A second replica on the same key file and store.
        let b = ApprovalStates::open(&key, &db, Duration::from_secs(600), &local()).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&key).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let state = a.seal(&binding());
        for (field, what) in [
            ("principal", "another principal"),
            ("tool", "another tool"),
            ("arguments", "other arguments"),
            ("definition", "the tool as it was defined"),
        ] {
            let mut other = binding();
            match field {
                "principal" => other.principal = "token:eve".into(),
                "tool" => other.tool = "shop/delete".into(),
                "arguments" => other.arguments = "a2".into(),
                _ => other.definition = "d2".into(),
            }
            let e = b.redeem(&state, &other).await.unwrap_err();
            assert!(e.to_string().contains(what), "{field}: {e}");
        }
        b.redeem(&state, &binding()).await.unwrap();
        assert_eq!(
            a.redeem(&state, &binding()).await,
            Err(StateRefusal::Replayed)
        );
        let mut forged = state.clone();
        forged.insert(5, 'x');
        assert_eq!(
            a.redeem(&forged, &binding()).await,
            Err(StateRefusal::Tampered)
        );
        // Another key does not open it.
        let other = ApprovalStates::open(
            &dir.path().join("other.key"),
            &db,
            Duration::from_secs(600),
            &local(),
        )
        .unwrap();
        assert_eq!(
            other.redeem(&a.seal(&binding()), &binding()).await,
            Err(StateRefusal::Tampered)
        );
    }

    #[tokio::test]
    async fn expired() {
        let dir = tempfile::tempdir().unwrap();
        let a = ApprovalStates::open(
            &dir.path().join("k"),
            &dir.path().join("u.sqlite"),
            Duration::from_secs(1),
            &local(),
        )
        .unwrap();
        let state = a.seal(&binding());
        tokio::time::sleep(Duration::from_millis(2100)).await;
        assert_eq!(
            a.redeem(&state, &binding()).await,
            Err(StateRefusal::Expired { ttl: 1 })
        );
    }

    #[test]
    fn a_bad_key_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("gw.key");
        std::fs::write(&key, "not hex").unwrap();
        let e = ApprovalStates::open(
            &key,
            &dir.path().join("u.sqlite"),
            Duration::from_secs(1),
            &local(),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("gw.key") && e.contains("approval key"), "{e}");
    }
}
