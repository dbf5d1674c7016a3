//! Fetching the issuer's keys now, rather than when a token needs them: what
//! a server does on SIGHUP, so that a key the issuer withdrew stops
//! verifying tokens at once instead of when the cache ages out.

use std::sync::Arc;
use std::time::Instant;

use super::OAuthVerifier;

impl OAuthVerifier {
    /// Discovers the JWKS again (unless it is configured), fetches it, and
    /// puts its keys in place of the cached ones; the number of keys. On
    /// failure the cached keys and the known JWKS URL stay, and the error
    /// says why.
    pub async fn refresh_keys(&self) -> Result<usize, String> {
        let mut state = self.inner.fetch.lock().await;
        let known = state.jwks_uri.clone();
        state.jwks_uri = self.inner.config.jwks_uri.clone();
        state.attempted_at = Some(Instant::now());
        match self.fetch_keys(&mut state).await {
            Ok(set) => {
                state.last_error = None;
                let n = set.keys.len();
                *self.inner.keys.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(set));
                Ok(n)
            }
            Err(e) => {
                if state.jwks_uri.is_none() {
                    state.jwks_uri = known;
                }
                state.last_error = Some(e.clone());
                Err(e)
            }
        }
    }
}
