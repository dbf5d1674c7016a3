//! Credentials read again while a server runs, so that revoking one takes
//! effect without a restart:
//! - the static tokens file is looked at every [`TOKEN_POLL`] (its inode,
//!   size and times, through symlinks: a Kubernetes Secret, updated by an
//!   atomic swap of a symlink, is seen like a file replaced by `mv`), and
//!   read again when it changed;
//! - on `SIGHUP` the tokens file is read again whether or not it changed,
//!   and the OAuth issuer's keys are fetched again
//!   ([`OAuthVerifier::refresh_keys`](crate::OAuthVerifier::refresh_keys)).
//!
//! A file that cannot be read, or is not well formed, or holds no token,
//! changes nothing: the tokens in force stay, and the error (naming the
//! file and the line) is logged. It never fails open and never stops the
//! server. The tokens a reload takes away are handed to a hook
//! ([`Reloader::on_removed`]), e.g. to revoke them on other replicas.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::{Authenticator, RemovedToken};

/// How often the tokens file is looked at.
pub const TOKEN_POLL: Duration = Duration::from_secs(1);

/// Told of the tokens a reload took away.
pub type RemovedHook = Arc<dyn Fn(&[RemovedToken]) + Send + Sync>;

/// Reads the credentials of an [`Authenticator`] again, on change and on
/// `SIGHUP`.
#[derive(Clone)]
pub struct Reloader {
    auth: Arc<Authenticator>,
    every: Duration,
    on_removed: Option<RemovedHook>,
}

impl std::fmt::Debug for Reloader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reloader")
            .field("auth", &self.auth)
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

/// What identifies a version of a file without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    len: u64,
    modified: Option<SystemTime>,
    #[cfg(unix)]
    unix: (u64, u64, i64, i64),
}

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    let m = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    let unix = {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino(), m.ctime(), m.ctime_nsec())
    };
    Some(Fingerprint {
        len: m.len(),
        modified: m.modified().ok(),
        #[cfg(unix)]
        unix,
    })
}

impl Reloader {
    /// A reloader of `auth`'s credentials, looking at the tokens file every
    /// [`TOKEN_POLL`].
    pub fn new(auth: Arc<Authenticator>) -> Reloader {
        Reloader {
            auth,
            every: TOKEN_POLL,
            on_removed: None,
        }
    }

    /// Looks at the tokens file every `every` instead.
    pub fn every(mut self, every: Duration) -> Reloader {
        self.every = every.max(Duration::from_millis(10));
        self
    }

    /// Calls `hook` with the tokens each reload took away (never with none).
    pub fn on_removed(
        mut self,
        hook: impl Fn(&[RemovedToken]) + Send + Sync + 'static,
    ) -> Reloader {
        self.on_removed = Some(Arc::new(hook));
        self
    }

    /// Runs in a task until it is aborted: polls the tokens file, and
    /// reloads everything on `SIGHUP` (on Unix; the signal no longer ends
    /// the process).
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move { self.run().await })
    }

    async fn run(self) {
        let path = self
            .auth
            .tokens
            .as_ref()
            .and_then(|t| t.path())
            .map(Path::to_path_buf);
        let mut seen = path.as_deref().and_then(fingerprint);
        let mut hangups = hangups();
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {
                    let Some(path) = &path else { continue };
                    let now = fingerprint(path);
                    if now != seen {
                        seen = now;
                        self.reload_tokens("it changed");
                    }
                }
                Some(()) = hangups.recv() => {
                    seen = path.as_deref().and_then(fingerprint);
                    self.reload_all().await;
                }
            }
        }
    }

    /// What `SIGHUP` does: reads the tokens file again (changed or not) and
    /// fetches the OAuth issuer's keys again.
    pub async fn reload_all(&self) {
        tracing::info!("SIGHUP: reading the credentials again");
        self.reload_tokens("SIGHUP");
        if let Some(oauth) = &self.auth.oauth {
            match oauth.refresh_keys().await {
                Ok(n) => tracing::info!(
                    issuer = %oauth.config().issuer,
                    "oauth: {n} keys in force after SIGHUP"
                ),
                Err(e) => tracing::error!(
                    issuer = %oauth.config().issuer,
                    "oauth: cannot fetch the issuer's keys after SIGHUP, the keys fetched \
                     before stay in force: {e}"
                ),
            }
        }
    }

    /// Reads the tokens file again, because of `why`.
    fn reload_tokens(&self, why: &str) {
        let Some(tokens) = &self.auth.tokens else {
            return;
        };
        let shown = tokens
            .path()
            .map_or_else(String::new, |p| p.display().to_string());
        match tokens.reload() {
            Ok(r) if r.is_unchanged() => {
                tracing::debug!("{shown}: read again ({why}), no token changed");
            }
            Ok(r) => {
                let removed: Vec<&str> = r.removed.iter().map(|t| t.name.as_str()).collect();
                tracing::info!(
                    removed = ?removed,
                    added = ?r.added,
                    "{shown}: read again ({why}): {} tokens in force",
                    r.count
                );
                if let (Some(hook), false) = (&self.on_removed, r.removed.is_empty()) {
                    hook(&r.removed);
                }
            }
            Err(e) => tracing::error!(
                "cannot read the tokens file again ({why}), the tokens loaded before stay in \
                 force: {e}"
            ),
        }
    }
}

/// One message per `SIGHUP` (none where there are no signals, or when the
/// handler cannot be installed).
fn hangups() -> tokio::sync::mpsc::Receiver<()> {
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::hangup()) {
            Ok(mut s) => {
                tokio::spawn(async move {
                    while s.recv().await.is_some() {
                        if tx.send(()).await.is_err() {
                            return;
                        }
                    }
                });
            }
            Err(e) => {
                tracing::warn!("cannot listen for SIGHUP, the tokens file is only polled: {e}")
            }
        }
    }
    #[cfg(not(unix))]
    drop(tx);
    rx
}
