//! Which principal opened each session, with the caps and the idle time:
//! the bookkeeping of [`super`], without I/O.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How many sessions there may be, and how long an idle one lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SessionLimits {
    /// Sessions open at once, all principals together; past it, `503`.
    pub max_total: usize,
    /// Sessions open at once per principal; past it, `429`.
    pub max_per_principal: usize,
    /// A session with no request in flight for this long is closed.
    pub idle: Duration,
}

impl SessionLimits {
    /// The default total cap.
    pub const DEFAULT_MAX_TOTAL: usize = 10_000;
    /// The default cap per principal.
    pub const DEFAULT_MAX_PER_PRINCIPAL: usize = 100;
    /// The default idle time: 30 minutes.
    pub const DEFAULT_IDLE: Duration = Duration::from_secs(30 * 60);

    /// Limits of `max_total` sessions, `max_per_principal` each, closed after
    /// `idle`. Caps of 0 are taken as 1.
    pub fn new(max_total: usize, max_per_principal: usize, idle: Duration) -> SessionLimits {
        SessionLimits {
            max_total: max_total.max(1),
            max_per_principal: max_per_principal.max(1),
            idle,
        }
    }
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits::new(
            Self::DEFAULT_MAX_TOTAL,
            Self::DEFAULT_MAX_PER_PRINCIPAL,
            Self::DEFAULT_IDLE,
        )
    }
}

/// Who may use a session, as [`SessionTable::enter`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// The caller opened it: the request goes on (and counts as in flight
    /// until [`SessionTable::leave`]).
    Owner,
    /// Another principal, named here, opened it.
    Foreign(String),
    /// No such session (never opened, ended, or expired).
    Unknown,
}

/// Why a new session was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The principal has `limit` sessions already.
    PerPrincipal {
        /// The cap.
        limit: usize,
        /// When one of its sessions will have been idle long enough to end.
        retry: Duration,
    },
    /// There are `limit` sessions already.
    Total {
        /// The cap.
        limit: usize,
        /// When some session will have been idle long enough to end.
        retry: Duration,
    },
}

#[derive(Debug)]
struct Entry {
    /// [`toolrag_auth::Principal::key`] of the owner.
    owner: String,
    /// The owner's name, for logs.
    name: String,
    last_seen: Instant,
    in_flight: u32,
}

#[derive(Debug, Default)]
struct Inner {
    sessions: HashMap<Arc<str>, Entry>,
    per_principal: HashMap<String, usize>,
}

impl Inner {
    fn remove(&mut self, id: &str) -> bool {
        let Some(e) = self.sessions.remove(id) else {
            return false;
        };
        if let Some(n) = self.per_principal.get_mut(&e.owner) {
            *n -= 1;
            if *n == 0 {
                self.per_principal.remove(&e.owner);
            }
        }
        true
    }

    /// How long until the first of the sessions `which` selects has been
    /// idle for `idle`; `idle` when none of them is idle now.
    fn next_expiry(
        &self,
        idle: Duration,
        now: Instant,
        which: impl Fn(&Entry) -> bool,
    ) -> Duration {
        self.sessions
            .values()
            .filter(|e| e.in_flight == 0 && which(e))
            .map(|e| (e.last_seen + idle).saturating_duration_since(now))
            .min()
            .unwrap_or(idle)
    }
}

/// Which principal owns each session, with the caps and the idle time.
#[derive(Debug)]
pub struct SessionTable {
    limits: SessionLimits,
    inner: Mutex<Inner>,
}

impl SessionTable {
    /// An empty table with these limits.
    pub fn new(limits: SessionLimits) -> SessionTable {
        SessionTable {
            limits,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// The limits.
    pub fn limits(&self) -> SessionLimits {
        self.limits
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        self.lock().sessions.len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Binds the new session `id` to the principal `owner` (its
    /// [`toolrag_auth::Principal::key`]; `name` for logs). Past a cap it is
    /// refused, once the sessions idle long enough are expired. Either way,
    /// the sessions expired meanwhile are returned, to be closed.
    pub fn bind(
        &self,
        id: Arc<str>,
        owner: &str,
        name: &str,
        now: Instant,
    ) -> (Result<(), Refusal>, Vec<Arc<str>>) {
        let mut inner = self.lock();
        let mut expired = Vec::new();
        let full = |inner: &Inner| {
            inner.sessions.len() >= self.limits.max_total
                || inner.per_principal.get(owner).copied().unwrap_or(0)
                    >= self.limits.max_per_principal
        };
        if full(&inner) {
            expired = self.expire_locked(&mut inner, now);
        }
        let mine = inner.per_principal.get(owner).copied().unwrap_or(0);
        let refusal = if mine >= self.limits.max_per_principal {
            Some(Refusal::PerPrincipal {
                limit: self.limits.max_per_principal,
                retry: inner.next_expiry(self.limits.idle, now, |e| e.owner == owner),
            })
        } else if inner.sessions.len() >= self.limits.max_total {
            Some(Refusal::Total {
                limit: self.limits.max_total,
                retry: inner.next_expiry(self.limits.idle, now, |_| true),
            })
        } else {
            None
        };
        if let Some(r) = refusal {
            return (Err(r), expired);
        }
        let entry = Entry {
            owner: owner.to_string(),
            name: name.to_string(),
            last_seen: now,
            in_flight: 0,
        };
        if let Some(old) = inner.sessions.insert(id, entry) {
            // A session id is a fresh random UUID; should one come twice, the
            // old binding's count goes with it.
            if let Some(n) = inner.per_principal.get_mut(&old.owner) {
                *n -= 1;
            }
        }
        *inner.per_principal.entry(owner.to_string()).or_default() += 1;
        (Ok(()), expired)
    }

    /// Who may use session `id`, for a request of the principal `caller`
    /// (its key). For its owner, the request counts as in flight (the
    /// session is not idle) until [`SessionTable::leave`].
    pub fn enter(&self, id: &str, caller: &str, now: Instant) -> Access {
        let mut inner = self.lock();
        match inner.sessions.get_mut(id) {
            None => Access::Unknown,
            Some(e) if e.owner != caller => Access::Foreign(e.name.clone()),
            Some(e) => {
                e.in_flight += 1;
                e.last_seen = now;
                Access::Owner
            }
        }
    }

    /// A request that [`SessionTable::enter`] let in is over (its response
    /// sent, or its stream closed).
    pub fn leave(&self, id: &str, now: Instant) {
        if let Some(e) = self.lock().sessions.get_mut(id) {
            e.in_flight = e.in_flight.saturating_sub(1);
            e.last_seen = now;
        }
    }

    /// Forgets session `id` (ended by its owner); whether it was there.
    pub fn remove(&self, id: &str) -> bool {
        self.lock().remove(id)
    }

    /// Removes the sessions with no request in flight and none for the idle
    /// time, and returns their ids, to be closed.
    pub fn expire(&self, now: Instant) -> Vec<Arc<str>> {
        let mut inner = self.lock();
        self.expire_locked(&mut inner, now)
    }

    fn expire_locked(&self, inner: &mut Inner, now: Instant) -> Vec<Arc<str>> {
        let idle = self.limits.idle;
        let expired: Vec<Arc<str>> = inner
            .sessions
            .iter()
            .filter(|(_, e)| e.in_flight == 0 && now.saturating_duration_since(e.last_seen) >= idle)
            .map(|(id, _)| id.clone())
            .collect();
        for id in &expired {
            inner.remove(id);
        }
        expired
    }

    /// Forgets the sessions for which `live` is false (ended by rmcp
    /// itself, say when its worker stopped); how many.
    pub fn retain_live(&self, live: impl Fn(&str) -> bool) -> usize {
        let mut inner = self.lock();
        let gone: Vec<Arc<str>> = inner
            .sessions
            .keys()
            .filter(|id| !live(id))
            .cloned()
            .collect();
        for id in &gone {
            inner.remove(id);
        }
        gone.len()
    }

    /// How many sessions `owner` (a principal's key) has open.
    pub fn count_of(&self, owner: &str) -> usize {
        self.lock().per_principal.get(owner).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(total: usize, each: usize, idle_ms: u64) -> SessionTable {
        SessionTable::new(SessionLimits::new(
            total,
            each,
            Duration::from_millis(idle_ms),
        ))
    }

    fn id(s: &str) -> Arc<str> {
        Arc::from(s)
    }

    #[test]
    fn a_session_answers_only_its_owner() {
        let t = table(10, 10, 60_000);
        let now = Instant::now();
        assert_eq!(t.bind(id("s1"), "token:alice", "alice", now).0, Ok(()));
        assert_eq!(t.enter("s1", "token:alice", now), Access::Owner);
        assert_eq!(
            t.enter("s1", "token:bob", now),
            Access::Foreign("alice".into())
        );
        assert_eq!(t.enter("s2", "token:alice", now), Access::Unknown);
        t.leave("s1", now);
        assert!(t.remove("s1"));
        assert_eq!(t.enter("s1", "token:alice", now), Access::Unknown);
        assert_eq!(t.count_of("token:alice"), 0);
        assert!(t.is_empty());
    }

    #[test]
    fn caps_per_principal_and_in_total() {
        let t = table(3, 2, 10_000);
        let now = Instant::now();
        for s in ["a1", "a2"] {
            assert_eq!(t.bind(id(s), "token:alice", "alice", now).0, Ok(()));
        }
        let later = now + Duration::from_millis(4_000);
        match t.bind(id("a3"), "token:alice", "alice", later).0 {
            Err(Refusal::PerPrincipal { limit: 2, retry }) => {
                assert_eq!(retry, Duration::from_millis(6_000))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(t.bind(id("b1"), "token:bob", "bob", later).0, Ok(()));
        assert!(matches!(
            t.bind(id("c1"), "token:carol", "carol", later).0,
            Err(Refusal::Total { limit: 3, .. })
        ));
        assert_eq!(t.len(), 3);
        assert_eq!(t.enter("a3", "token:alice", later), Access::Unknown);
    }

    #[test]
    fn idle_sessions_expire_but_not_while_a_request_is_in_flight() {
        let t = table(10, 1, 1_000);
        let now = Instant::now();
        t.bind(id("a1"), "token:alice", "alice", now).0.unwrap();
        t.bind(id("b1"), "token:bob", "bob", now).0.unwrap();
        assert_eq!(t.enter("b1", "token:bob", now), Access::Owner);
        let later = now + Duration::from_millis(1_500);
        // At her cap, alice's idle session is expired to make room.
        let (bound, expired) = t.bind(id("a2"), "token:alice", "alice", later);
        assert_eq!(bound, Ok(()));
        assert_eq!(expired, vec![id("a1")]);
        // Bob's stream is still open: his session stays.
        assert!(t
            .expire(later + Duration::from_secs(60))
            .contains(&id("a2")));
        assert_eq!(t.enter("b1", "token:bob", later), Access::Owner);
        t.leave("b1", later);
        t.leave("b1", later);
        assert_eq!(
            t.expire(later + Duration::from_millis(999)),
            Vec::<Arc<str>>::new()
        );
        assert_eq!(
            t.expire(later + Duration::from_millis(1_000)),
            vec![id("b1")]
        );
        assert!(t.is_empty());
    }

    #[test]
    fn sessions_rmcp_ended_are_forgotten() {
        let t = table(10, 10, 60_000);
        let now = Instant::now();
        t.bind(id("a1"), "token:alice", "alice", now).0.unwrap();
        t.bind(id("a2"), "token:alice", "alice", now).0.unwrap();
        assert_eq!(t.retain_live(|s| s == "a2"), 1);
        assert_eq!(t.count_of("token:alice"), 1);
    }
}
