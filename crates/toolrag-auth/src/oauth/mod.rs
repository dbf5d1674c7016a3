//! OAuth 2.1 access tokens, as the MCP authorization spec asks of a resource
//! server: JWTs signed by the authorization server (checked against its
//! JWKS), for this resource (RFC 8707 audience), unexpired, with the scopes
//! it requires; and the protected resource metadata (RFC 9728) that tells a
//! client where to get one.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use reqwest::Url;
use serde_json::{json, Map, Value};

mod config;
mod refresh;
#[cfg(test)]
mod tests;

pub use config::OAuthConfig;

use crate::{AuthError, AuthMethod, ConfigError, Principal};
use config::check_url;

/// How long a fetched JWKS is used before it is fetched again on the next
/// token (a failed refresh keeps the old keys).
const JWKS_MAX_AGE: Duration = Duration::from_secs(600);
/// The largest metadata document or JWKS read from the issuer.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;
/// Connecting to the issuer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A whole request to the issuer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One verification key of the issuer's JWKS.
#[derive(Clone)]
struct VerifyingKey {
    kid: Option<String>,
    /// The JWK's `alg`, when it names one.
    alg: Option<Algorithm>,
    /// The algorithms this key can check: its `alg`, or those of its type
    /// and curve.
    algorithms: Vec<Algorithm>,
    key: DecodingKey,
}

impl VerifyingKey {
    /// The key of a JWK, or why it is skipped: symmetric, for encryption,
    /// or of a type or curve not supported.
    fn from_jwk(jwk: &Jwk) -> Result<VerifyingKey, String> {
        if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
            return Err("not a signing key (`use` is not `sig`)".into());
        }
        let by_type: Vec<Algorithm> = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa.algorithms().to_vec(),
            AlgorithmParameters::EllipticCurve(p) => match p.curve {
                EllipticCurve::P256 => vec![Algorithm::ES256],
                EllipticCurve::P384 => vec![Algorithm::ES384],
                _ => return Err(format!("the curve {:?} is not supported", p.curve)),
            },
            AlgorithmParameters::OctetKeyPair(p) => match p.curve {
                EllipticCurve::Ed25519 => vec![Algorithm::EdDSA],
                _ => return Err(format!("the curve {:?} is not supported", p.curve)),
            },
            AlgorithmParameters::OctetKey(_) => {
                return Err("a symmetric key (`oct`) is never used to check tokens".into())
            }
            _ => return Err("the key type is not supported".into()),
        };
        let alg = match jwk.common.key_algorithm {
            None => None,
            Some(ka) => {
                let alg = Algorithm::try_from(ka)
                    .ok()
                    .filter(|a| by_type.contains(a))
                    .ok_or_else(|| format!("its `alg` {ka} does not fit the key"))?;
                Some(alg)
            }
        };
        let key = DecodingKey::from_jwk(jwk).map_err(|e| format!("not a valid key: {e}"))?;
        Ok(VerifyingKey {
            kid: jwk.common.key_id.clone(),
            alg,
            algorithms: alg.map_or(by_type, |a| vec![a]),
            key,
        })
    }
}

/// The keys of one fetch of the JWKS.
struct KeySet {
    keys: Vec<VerifyingKey>,
    fetched_at: Instant,
}

impl KeySet {
    /// The key a token with this `kid` and `alg` names: by `kid`, or, with
    /// no `kid`, the one key that can check `alg`.
    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<&VerifyingKey> {
        match kid {
            Some(kid) => self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None => {
                let mut fitting = self.keys.iter().filter(|k| k.algorithms.contains(&alg));
                let first = fitting.next();
                if fitting.next().is_some() {
                    None
                } else {
                    first
                }
            }
        }
    }
}

/// What the verifier remembers between fetches (under the fetch lock).
#[derive(Default)]
struct FetchState {
    /// The JWKS URL, configured or discovered.
    jwks_uri: Option<String>,
    /// When the last fetch was tried.
    attempted_at: Option<Instant>,
    /// Why the last fetch failed, if it did.
    last_error: Option<String>,
}

struct Inner {
    config: OAuthConfig,
    http: reqwest::Client,
    /// The current keys; replaced whole by each successful fetch.
    keys: RwLock<Option<Arc<KeySet>>>,
    /// Held while fetching, so concurrent tokens share one fetch.
    fetch: tokio::sync::Mutex<FetchState>,
}

/// Checks OAuth access tokens (JWTs) for one resource, against the keys of
/// one authorization server. Cheap to clone: clones share the key cache.
#[derive(Clone)]
pub struct OAuthVerifier {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OAuthVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthVerifier")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// Why the keys cannot be had: the message of an `Unavailable`.
type FetchError = String;

impl OAuthVerifier {
    /// A verifier for `config` (checked with [`OAuthConfig::validate`]).
    /// Nothing is fetched until the first token.
    pub fn new(config: OAuthConfig) -> Result<OAuthVerifier, ConfigError> {
        config.validate()?;
        // reqwest is built without a TLS crypto provider of its own (as
        // rmcp's, in the same process); ring is the default unless one is set.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(REQUEST_TIMEOUT)
            .redirect(reqwest::redirect::Policy::limited(3))
            .user_agent(concat!("toolrag-auth/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ConfigError::Invalid(format!("the HTTP client for OAuth: {e}")))?;
        let fetch = FetchState {
            jwks_uri: config.jwks_uri.clone(),
            ..FetchState::default()
        };
        Ok(OAuthVerifier {
            inner: Arc::new(Inner {
                config,
                http,
                keys: RwLock::new(None),
                fetch: tokio::sync::Mutex::new(fetch),
            }),
        })
    }

    /// The settings.
    pub fn config(&self) -> &OAuthConfig {
        &self.inner.config
    }

    /// The protected resource metadata of this resource (RFC 9728), to
    /// serve at [`OAuthVerifier::resource_metadata_url`].
    pub fn protected_resource_metadata(&self) -> Value {
        let c = &self.inner.config;
        json!({
            "resource": c.resource,
            "authorization_servers": [c.issuer],
            "scopes_supported": c.required_scopes,
            "bearer_methods_supported": ["header"],
        })
    }

    /// Where the protected resource metadata is served (RFC 9728 section
    /// 3.1): `/.well-known/oauth-protected-resource` inserted between the
    /// resource's host and its path, e.g.
    /// `http://127.0.0.1:8765/.well-known/oauth-protected-resource/mcp`;
    /// the `resource_metadata` of a 401's `WWW-Authenticate: Bearer`.
    pub fn resource_metadata_url(&self) -> String {
        well_known(&self.inner.config.resource, "oauth-protected-resource")
    }

    /// The principal of the access token `token`, or why it is refused.
    /// The signature is checked against the issuer's JWKS (fetched on first
    /// use, and again, at most every `jwks_refetch_min_seconds`, for a key
    /// it does not know); then `iss`, `aud` (the resource), `exp` and `nbf`
    /// (with the leeway) and the required scopes. No error names the token.
    pub async fn verify(&self, token: &str) -> Result<Principal, AuthError> {
        let result = self.verify_inner(token).await;
        if let Err(e) = &result {
            tracing::debug!(error = %e, "oauth: token refused");
        }
        result
    }

    async fn verify_inner(&self, token: &str) -> Result<Principal, AuthError> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            AuthError::Invalid(
                "not a JWT with a supported algorithm (RS*, PS*, ES256, ES384, EdDSA; never \
                 `none`)"
                    .into(),
            )
        })?;
        let alg = header.alg;
        if alg.family() == AlgorithmFamily::Hmac {
            return Err(AuthError::Invalid(format!(
                "the algorithm {alg:?} is refused: only the issuer's public-key signatures are \
                 accepted"
            )));
        }
        let key = self.key_for(header.kid.as_deref(), alg).await?;
        if !key.algorithms.contains(&alg) {
            return Err(AuthError::Invalid(format!(
                "the token is signed with {alg:?}, which its key (kid `{}`) is not for{}",
                key.kid.as_deref().unwrap_or("-"),
                key.alg
                    .map(|a| format!(" (it is for {a:?})"))
                    .unwrap_or_default()
            )));
        }
        let c = &self.inner.config;
        let mut validation = Validation::new(alg);
        validation.leeway = c.leeway_seconds;
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.validate_aud = true;
        validation.set_audience(&[&c.resource]);
        validation.set_issuer(&[&c.issuer]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation)
            .map_err(|e| self.claims_error(e.kind()))?;
        self.principal(&data.claims)
    }

    fn claims_error(&self, kind: &ErrorKind) -> AuthError {
        let c = &self.inner.config;
        match kind {
            ErrorKind::ExpiredSignature => AuthError::Expired,
            ErrorKind::InvalidSignature => {
                AuthError::Invalid("the signature does not match".into())
            }
            ErrorKind::InvalidAudience => AuthError::Invalid(format!(
                "the token is for another audience, not this resource `{}` (RFC 8707)",
                c.resource
            )),
            ErrorKind::InvalidIssuer => AuthError::Invalid(format!(
                "the token is from another issuer than `{}`",
                c.issuer
            )),
            ErrorKind::ImmatureSignature => {
                AuthError::Invalid("the token is not valid yet (`nbf`)".into())
            }
            ErrorKind::MissingRequiredClaim(claim) => {
                AuthError::Invalid(format!("the token has no `{claim}` claim"))
            }
            ErrorKind::InvalidClaimFormat(claim) => {
                AuthError::Invalid(format!("the token's `{claim}` claim is not well formed"))
            }
            ErrorKind::InvalidAlgorithm => {
                AuthError::Invalid("the token's algorithm does not fit its key".into())
            }
            _ => AuthError::Invalid("the token is not a well-formed JWT".into()),
        }
    }

    /// The principal of verified claims; the required scopes checked.
    fn principal(&self, claims: &Map<String, Value>) -> Result<Principal, AuthError> {
        let c = &self.inner.config;
        let text = |name: &str| {
            claims
                .get(name)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        let subject = text("sub");
        let client_id = text("client_id").or_else(|| text("azp"));
        let name = subject
            .clone()
            .or_else(|| client_id.clone())
            .ok_or_else(|| {
                AuthError::Invalid("the token has neither `sub` nor `client_id`".into())
            })?;
        let scopes: Vec<String> = match (claims.get("scope"), claims.get("scp")) {
            (Some(Value::String(s)), _) => s.split_whitespace().map(str::to_string).collect(),
            (_, Some(scp)) => strings(scp),
            _ => Vec::new(),
        };
        if let Some(missing) = c.required_scopes.iter().find(|s| !scopes.contains(s)) {
            return Err(AuthError::InsufficientScope(missing.clone()));
        }
        let groups = claim(claims, &c.group_claim)
            .map(strings)
            .unwrap_or_default();
        Ok(Principal {
            name,
            subject,
            client_id,
            groups,
            scopes,
            method: AuthMethod::Oauth,
        })
    }

    /// The key for a token's `kid` and `alg`: from the cache, or after a
    /// fetch when the cache is empty, stale, or does not know the key.
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<VerifyingKey, AuthError> {
        let current = self.current_keys();
        if let Some(set) = &current {
            if set.fetched_at.elapsed() < JWKS_MAX_AGE {
                if let Some(key) = set.find(kid, alg) {
                    return Ok(key.clone());
                }
            }
        }
        let mut state = self.inner.fetch.lock().await;
        // Another token may have fetched while this one waited.
        let seen = current.as_ref().map(|s| s.fetched_at);
        let now_keys = self.current_keys();
        if let Some(set) = &now_keys {
            if Some(set.fetched_at) != seen {
                return set.find(kid, alg).cloned().ok_or_else(|| unknown_key(kid));
            }
        }
        let min = Duration::from_secs(self.inner.config.jwks_refetch_min_seconds);
        if state.attempted_at.is_some_and(|at| at.elapsed() < min) {
            // Too soon to ask again: answer from what there is (stale
            // keys included).
            if let Some(key) = now_keys.as_ref().and_then(|s| s.find(kid, alg)) {
                return Ok(key.clone());
            }
            return Err(if now_keys.is_none() || state.last_error.is_some() {
                unavailable(&state)
            } else {
                unknown_key(kid)
            });
        }
        state.attempted_at = Some(Instant::now());
        match self.fetch_keys(&mut state).await {
            Ok(set) => {
                state.last_error = None;
                let set = Arc::new(set);
                *self.inner.keys.write().unwrap_or_else(|p| p.into_inner()) = Some(set.clone());
                set.find(kid, alg).cloned().ok_or_else(|| unknown_key(kid))
            }
            Err(e) => {
                tracing::warn!(issuer = %self.inner.config.issuer, error = %e, "oauth: cannot fetch the issuer's keys");
                state.last_error = Some(e);
                // Stale keys still serve while the issuer is away.
                match now_keys.as_ref().and_then(|s| s.find(kid, alg)) {
                    Some(key) => Ok(key.clone()),
                    None => Err(unavailable(&state)),
                }
            }
        }
    }

    fn current_keys(&self) -> Option<Arc<KeySet>> {
        self.inner
            .keys
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Fetches the JWKS (discovering its URL first if need be).
    async fn fetch_keys(&self, state: &mut FetchState) -> Result<KeySet, FetchError> {
        let uri = match &state.jwks_uri {
            Some(uri) => uri.clone(),
            None => {
                let uri = self.discover_jwks_uri().await?;
                state.jwks_uri = Some(uri.clone());
                uri
            }
        };
        let doc = self
            .get_json(&uri)
            .await?
            .ok_or_else(|| format!("{uri}: not found (404)"))?;
        let Some(entries) = doc.get("keys").and_then(Value::as_array) else {
            return Err(format!("{uri}: not a JWKS (no `keys` array)"));
        };
        let mut keys = Vec::new();
        for entry in entries {
            let kid = entry.get("kid").and_then(Value::as_str).unwrap_or("-");
            let parsed = serde_json::from_value::<Jwk>(entry.clone())
                .map_err(|e| format!("not a JWK: {e}"))
                .and_then(|jwk| VerifyingKey::from_jwk(&jwk));
            match parsed {
                Ok(key) => keys.push(key),
                Err(why) => tracing::debug!(kid, why, "oauth: JWKS key skipped"),
            }
        }
        tracing::info!(uri, keys = keys.len(), "oauth: fetched the issuer's keys");
        Ok(KeySet {
            keys,
            fetched_at: Instant::now(),
        })
    }

    /// The issuer's `jwks_uri`, from its authorization server metadata
    /// (RFC 8414), or its OpenID configuration, at the addresses the MCP
    /// authorization spec lists, in its order.
    async fn discover_jwks_uri(&self) -> Result<String, FetchError> {
        let issuer = &self.inner.config.issuer;
        for url in discovery_urls(issuer) {
            let Some(doc) = self.get_json(&url).await? else {
                continue;
            };
            let meta_issuer = doc
                .get("issuer")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if meta_issuer != issuer {
                return Err(format!(
                    "{url}: its `issuer` is `{meta_issuer}`, not the configured `{issuer}`; they \
                     must be the same string"
                ));
            }
            let Some(jwks_uri) = doc.get("jwks_uri").and_then(Value::as_str) else {
                return Err(format!("{url}: no `jwks_uri`"));
            };
            check_url("the issuer's jwks_uri", jwks_uri).map_err(|e| e.to_string())?;
            tracing::debug!(metadata = url, jwks_uri, "oauth: discovered the JWKS");
            return Ok(jwks_uri.to_string());
        }
        Err(format!(
            "no authorization server metadata for `{issuer}` (tried /.well-known/oauth-authorization-server \
             and /.well-known/openid-configuration); set the jwks_uri"
        ))
    }

    /// GETs a JSON document; `None` when it is not there (404, 410).
    async fn get_json(&self, url: &str) -> Result<Option<Value>, FetchError> {
        let mut response = self
            .inner
            .http
            .get(url)
            .header(reqwest::header::ACCEPT, "application/json")
            .send()
            .await
            .map_err(|e| describe_http_error(url, &e))?;
        let status = response.status();
        if status == reqwest::StatusCode::NOT_FOUND || status == reqwest::StatusCode::GONE {
            return Ok(None);
        }
        if !status.is_success() {
            return Err(format!("{url}: HTTP {status}"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| describe_http_error(url, &e))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(format!("{url}: larger than {MAX_DOCUMENT_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        serde_json::from_slice(&body)
            .map(Some)
            .map_err(|e| format!("{url}: not JSON: {e}"))
    }
}

fn describe_http_error(url: &str, e: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut message = format!("{url}: {e}");
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
}

fn unknown_key(kid: Option<&str>) -> AuthError {
    match kid {
        Some(kid) => AuthError::Invalid(format!(
            "the signing key `{kid}` is not one of the issuer's"
        )),
        None => AuthError::Invalid(
            "the token names no key (`kid`) and no single key of the issuer's fits it".into(),
        ),
    }
}

fn unavailable(state: &FetchState) -> AuthError {
    AuthError::Unavailable(format!(
        "the issuer's keys cannot be fetched: {}",
        state.last_error.as_deref().unwrap_or("not fetched yet")
    ))
}

/// `/.well-known/<suffix>` inserted between the URL's origin and its path
/// (RFC 8414 section 3, RFC 9728 section 3.1).
fn well_known(base: &str, suffix: &str) -> String {
    match Url::parse(base) {
        Ok(url) => {
            let path = url.path().trim_end_matches('/');
            format!(
                "{}/.well-known/{suffix}{path}",
                url.origin().ascii_serialization()
            )
        }
        Err(_) => format!("{}/.well-known/{suffix}", base.trim_end_matches('/')),
    }
}

/// The metadata addresses of an issuer, in the order of the MCP
/// authorization spec: RFC 8414's, then OpenID Connect's (path inserted,
/// then appended, when the issuer has a path).
fn discovery_urls(issuer: &str) -> Vec<String> {
    let mut urls = vec![
        well_known(issuer, "oauth-authorization-server"),
        well_known(issuer, "openid-configuration"),
    ];
    let appended = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    if !urls.contains(&appended) {
        urls.push(appended);
    }
    urls
}

/// A claim by name, or, for a dotted name with no such top-level claim, by
/// path.
fn claim<'a>(claims: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    if let Some(v) = claims.get(name) {
        return Some(v);
    }
    let mut parts = name.split('.');
    let mut value = claims.get(parts.next()?)?;
    for part in parts {
        value = value.get(part)?;
    }
    Some(value)
}

/// The strings of a claim: an array's strings, or one string.
fn strings(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}
