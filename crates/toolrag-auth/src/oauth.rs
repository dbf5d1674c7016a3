//! OAuth 2.1 access tokens, as the MCP authorization spec asks of a resource
//! server: JWTs signed by the authorization server (checked against its
//! JWKS), for this resource (RFC 8707 audience), unexpired, with the scopes
//! it requires; and the protected resource metadata (RFC 9728) that tells a
//! client where to get one.

use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use reqwest::Url;
use serde_json::{json, Map, Value};

use crate::{AuthError, AuthMethod, ConfigError, Principal, StaticTokens};

/// How long a fetched JWKS is used before it is fetched again on the next
/// token (a failed refresh keeps the old keys).
const JWKS_MAX_AGE: Duration = Duration::from_secs(600);
/// The largest metadata document or JWKS read from the issuer.
const MAX_DOCUMENT_BYTES: usize = 1 << 20;
/// Connecting to the issuer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// A whole request to the issuer.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The settings of the OAuth resource server: whose tokens it accepts, and
/// for what.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// The authorization server's issuer identifier; a token's `iss` must
    /// equal it exactly.
    pub issuer: String,
    /// This server's canonical URL, e.g. `http://127.0.0.1:8765/mcp`: the
    /// audience a token must name (RFC 8707).
    pub resource: String,
    /// Scopes every token must carry.
    pub required_scopes: Vec<String>,
    /// The claim whose values are the principal's groups (default
    /// `groups`). A name with dots (`realm_access.roles`) also finds a
    /// nested claim when no top-level claim has that name.
    pub group_claim: String,
    /// Where the signing keys are. Default: the `jwks_uri` of the issuer's
    /// metadata (`/.well-known/oauth-authorization-server`, falling back to
    /// `/.well-known/openid-configuration`).
    pub jwks_uri: Option<String>,
    /// Clock skew allowed on `exp` and `nbf`, in seconds (default 30).
    pub leeway_seconds: u64,
    /// The least time between two fetches of the JWKS, in seconds (default
    /// 30): a token signed by an unknown key triggers a fetch at most this
    /// often, so a flood of bad tokens cannot make this server hammer the
    /// issuer.
    pub jwks_refetch_min_seconds: u64,
}

impl OAuthConfig {
    /// The settings for tokens from `issuer` for the resource `resource`,
    /// with no required scope and the defaults above.
    pub fn new(issuer: impl Into<String>, resource: impl Into<String>) -> OAuthConfig {
        OAuthConfig {
            issuer: issuer.into(),
            resource: resource.into(),
            required_scopes: Vec::new(),
            group_claim: "groups".into(),
            jwks_uri: None,
            leeway_seconds: 30,
            jwks_refetch_min_seconds: 30,
        }
    }

    /// Checks the settings: the URLs are absolute `https` URLs (plain
    /// `http` only to a loopback host), the issuer has no query or
    /// fragment, the resource no fragment, and the scopes and the group
    /// claim are well formed.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let issuer = check_url("the OAuth issuer", &self.issuer)?;
        if issuer.query().is_some() || issuer.fragment().is_some() {
            return Err(ConfigError::Invalid(format!(
                "the OAuth issuer `{}` must have no query or fragment (RFC 8414)",
                self.issuer
            )));
        }
        let resource = check_url("the OAuth resource", &self.resource)?;
        if resource.fragment().is_some() {
            return Err(ConfigError::Invalid(format!(
                "the OAuth resource `{}` must have no fragment (RFC 8707)",
                self.resource
            )));
        }
        if let Some(uri) = &self.jwks_uri {
            check_url("the OAuth jwks_uri", uri)?;
        }
        if self.group_claim.trim().is_empty() {
            return Err(ConfigError::Invalid(
                "the OAuth group claim is empty; the usual one is `groups`".into(),
            ));
        }
        for scope in &self.required_scopes {
            if scope.is_empty()
                || scope
                    .chars()
                    .any(|c| c.is_whitespace() || c == '"' || c == '\\')
            {
                return Err(ConfigError::Invalid(format!(
                    "the required scope `{scope}` is not a scope token (RFC 6749 section 3.3): \
                     one word, no spaces or quotes"
                )));
            }
        }
        Ok(())
    }
}

/// Parses `value` as an http(s) URL; plain http only to a loopback host.
fn check_url(what: &str, value: &str) -> Result<Url, ConfigError> {
    let url = Url::parse(value).map_err(|e| {
        ConfigError::Invalid(format!("{what} `{value}` is not an absolute URL: {e}"))
    })?;
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        "http" => {
            return Err(ConfigError::Invalid(format!(
                "{what} `{value}` must use https: plain http is allowed only to a loopback \
                 host (localhost, 127.0.0.1, [::1])"
            )))
        }
        other => {
            return Err(ConfigError::Invalid(format!(
                "{what} `{value}` must be an https URL (or http to a loopback host), not `{other}:`"
            )))
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(ConfigError::Invalid(format!(
            "{what} `{value}` has no host"
        )));
    }
    Ok(url)
}

fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            host.eq_ignore_ascii_case("localhost")
                || host.to_ascii_lowercase().ends_with(".localhost")
        }
    }
}

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

/// Whether `token` has the shape of a JWS compact serialization: three
/// base64url parts, the first a JSON object (`eyJ`).
pub fn looks_like_jwt(token: &str) -> bool {
    let parts: Vec<&str> = token.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts[..2].iter().all(|p| !p.is_empty())
        && parts.iter().all(|p| {
            p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// Who a request comes from, by whichever credentials this server accepts:
/// static tokens, OAuth access tokens, or both.
#[derive(Debug, Clone, Default)]
pub struct Authenticator {
    /// The static bearer tokens, tried first.
    pub tokens: Option<StaticTokens>,
    /// The OAuth verifier, for tokens of JWT shape.
    pub oauth: Option<OAuthVerifier>,
}

impl Authenticator {
    /// An authenticator with these credentials.
    pub fn new(tokens: Option<StaticTokens>, oauth: Option<OAuthVerifier>) -> Authenticator {
        Authenticator { tokens, oauth }
    }

    /// Whether any credential is configured (without, every request is
    /// refused; the front end decides whether to authenticate at all).
    pub fn is_configured(&self) -> bool {
        self.tokens.is_some() || self.oauth.is_some()
    }

    /// The principal of a request, from the raw value of its
    /// `Authorization` header (`Bearer <token>`, the scheme in any case):
    /// [`AuthError::Missing`] when there is none; otherwise the static
    /// tokens first, then, for a token of JWT shape, the OAuth verifier.
    pub async fn authenticate(&self, authorization: Option<&str>) -> Result<Principal, AuthError> {
        let token = bearer_token(authorization)?;
        if let Some(tokens) = &self.tokens {
            if let Ok(principal) = tokens.verify(token) {
                return Ok(principal);
            }
        }
        match &self.oauth {
            Some(oauth) if looks_like_jwt(token) => oauth.verify(token).await,
            Some(_) if self.tokens.is_none() => Err(AuthError::Invalid(
                "not a JWT access token from the authorization server".into(),
            )),
            _ if self.is_configured() => Err(AuthError::Invalid("no such token".into())),
            _ => Err(AuthError::Invalid(
                "this server accepts no bearer tokens".into(),
            )),
        }
    }
}

/// The token of an `Authorization: Bearer <token>` value.
pub fn bearer_token(authorization: Option<&str>) -> Result<&str, AuthError> {
    let value = authorization.map(str::trim).filter(|v| !v.is_empty());
    let Some(value) = value else {
        return Err(AuthError::Missing);
    };
    let (scheme, rest) = value.split_once([' ', '\t']).unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Invalid(
            "the Authorization header is not `Bearer <token>`".into(),
        ));
    }
    let token = rest.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(AuthError::Invalid(
            "the Authorization header is not `Bearer <token>`".into(),
        ));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;

    use jsonwebtoken::{EncodingKey, Header};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    /// Two P-256 keys (PKCS#8 DER), made with `openssl genpkey` for these tests.
    const KEY_1: &str = "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b02010104207b5f2d5740c25af6084bc9d1fa1b90fd0580a4bca9f7f4e6b498b55d452bb6bba1440342000442690408149e5abd1c446a8cbd3bc7aa670a5520cdb83bccb6d2bcb641f3a71e0fbd67e555c1366b4945a7dee832132fdd29e955c30cbd695c12f387ae986531";
    const KEY_2: &str = "308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420f4a5e3eb7ded6abfeac6c57fa77d888c56f8fa82bf33d32b2822ebdc55be2a80a144034200048ae62daac6827856fc56833a78660e50ba6720f5e68e69f5c8d5cb3b75dfb1f901cc1f55e948226027df7c47066fc08b126e8e74e6789bde8d2bbcc66d734ca9";
    const RESOURCE: &str = "http://127.0.0.1:8765/mcp";

    fn encoding_key(hexed: &str) -> EncodingKey {
        EncodingKey::from_ec_der(&hex::decode(hexed).unwrap())
    }

    /// The public JWK of a key, with its `kid`.
    fn public_jwk(hexed: &str, kid: &str) -> Value {
        let mut jwk = Jwk::from_encoding_key(&encoding_key(hexed), Algorithm::ES256).unwrap();
        jwk.common.key_id = Some(kid.into());
        serde_json::to_value(jwk).unwrap()
    }

    /// A tiny authorization server: RFC 8414 metadata and a JWKS that a
    /// test changes, counting the JWKS fetches.
    struct Issuer {
        url: String,
        jwks: Arc<Mutex<Value>>,
        fetches: Arc<AtomicUsize>,
    }

    impl Issuer {
        async fn start(keys: Vec<Value>) -> Issuer {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}", listener.local_addr().unwrap());
            let jwks = Arc::new(Mutex::new(json!({ "keys": keys })));
            let fetches = Arc::new(AtomicUsize::new(0));
            let (u, j, f) = (url.clone(), jwks.clone(), fetches.clone());
            tokio::spawn(async move {
                loop {
                    let Ok((mut conn, _)) = listener.accept().await else {
                        return;
                    };
                    let (u, j, f) = (u.clone(), j.clone(), f.clone());
                    tokio::spawn(async move {
                        let mut buf = Vec::new();
                        let mut chunk = [0u8; 1024];
                        while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                            match conn.read(&mut chunk).await {
                                Ok(0) | Err(_) => return,
                                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                            }
                        }
                        let request = String::from_utf8_lossy(&buf);
                        let path = request.split_whitespace().nth(1).unwrap_or("/").to_string();
                        let (status, body) = match path.as_str() {
                            "/.well-known/oauth-authorization-server" => (
                                "200 OK",
                                json!({"issuer": u, "jwks_uri": format!("{u}/jwks")}).to_string(),
                            ),
                            "/jwks" => {
                                f.fetch_add(1, Ordering::SeqCst);
                                ("200 OK", j.lock().unwrap().to_string())
                            }
                            _ => ("404 Not Found", "{}".to_string()),
                        };
                        let response = format!(
                            "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                            body.len()
                        );
                        let _ = conn.write_all(response.as_bytes()).await;
                    });
                }
            });
            Issuer { url, jwks, fetches }
        }

        fn set_keys(&self, keys: Vec<Value>) {
            *self.jwks.lock().unwrap() = json!({ "keys": keys });
        }

        fn fetches(&self) -> usize {
            self.fetches.load(Ordering::SeqCst)
        }

        fn verifier(&self, refetch: u64) -> OAuthVerifier {
            let mut config = OAuthConfig::new(&self.url, RESOURCE);
            config.required_scopes = vec!["tools".into()];
            config.jwks_refetch_min_seconds = refetch;
            OAuthVerifier::new(config).unwrap()
        }

        fn claims(&self) -> Value {
            let now = jsonwebtoken::get_current_timestamp();
            json!({
                "iss": self.url, "aud": RESOURCE, "sub": "alice-bot", "client_id": "alice-bot",
                "scope": "tools admin", "groups": ["shop"], "iat": now, "exp": now + 600,
            })
        }
    }

    fn sign(claims: &Value, key: &str, kid: &str) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.into());
        jsonwebtoken::encode(&header, claims, &encoding_key(key)).unwrap()
    }

    fn with(mut claims: Value, key: &str, value: Value) -> Value {
        claims[key] = value;
        claims
    }

    #[tokio::test]
    async fn good_token() {
        let issuer = Issuer::start(vec![public_jwk(KEY_1, "k1")]).await;
        let v = issuer.verifier(30);
        let token = sign(&issuer.claims(), KEY_1, "k1");
        let p = v.verify(&token).await.unwrap();
        assert_eq!(p.name, "alice-bot");
        assert_eq!(p.subject.as_deref(), Some("alice-bot"));
        assert_eq!(p.client_id.as_deref(), Some("alice-bot"));
        assert_eq!(p.groups, ["shop"]);
        assert_eq!(p.scopes, ["tools", "admin"]);
        assert_eq!(p.method, AuthMethod::Oauth);
        // `aud` as an array, `scp` as an array, one group as a string, `azp`.
        let mut claims = issuer.claims();
        let m = claims.as_object_mut().unwrap();
        m.insert("aud".into(), json!(["other", RESOURCE]));
        m.remove("scope");
        m.remove("sub");
        m.remove("client_id");
        m.insert("scp".into(), json!(["tools"]));
        m.insert("groups".into(), json!("support"));
        m.insert("azp".into(), json!("bob-bot"));
        let p = v.verify(&sign(&claims, KEY_1, "k1")).await.unwrap();
        assert_eq!((p.name.as_str(), p.subject), ("bob-bot", None));
        assert_eq!(
            (p.groups, p.scopes),
            (vec!["support".into()], vec!["tools".into()])
        );
        assert_eq!(issuer.fetches(), 1, "the JWKS is cached");
    }

    #[tokio::test]
    async fn refused_claims() {
        let issuer = Issuer::start(vec![public_jwk(KEY_1, "k1")]).await;
        let v = issuer.verifier(30);
        let now = jsonwebtoken::get_current_timestamp();
        let claims = issuer.claims();
        let check = |claims: Value| {
            let v = v.clone();
            async move {
                let token = sign(&claims, KEY_1, "k1");
                let e = v.verify(&token).await.unwrap_err();
                assert!(!e.to_string().contains(&token));
                e
            }
        };
        let e = check(with(
            claims.clone(),
            "aud",
            json!("http://127.0.0.1:9999/other"),
        ))
        .await;
        assert!(
            matches!(&e, AuthError::Invalid(m) if m.contains("audience")),
            "{e}"
        );
        let e = check(with(
            claims.clone(),
            "iss",
            json!("http://127.0.0.1:1/evil"),
        ))
        .await;
        assert!(
            matches!(&e, AuthError::Invalid(m) if m.contains("issuer")),
            "{e}"
        );
        let e = check(with(claims.clone(), "exp", json!(now - 120))).await;
        assert_eq!(e, AuthError::Expired);
        // Within the leeway (30 s) an expired token still passes.
        let token = sign(&with(claims.clone(), "exp", json!(now - 5)), KEY_1, "k1");
        v.verify(&token).await.unwrap();
        let e = check(with(claims.clone(), "nbf", json!(now + 300))).await;
        assert!(
            matches!(&e, AuthError::Invalid(m) if m.contains("nbf")),
            "{e}"
        );
        let e = check(with(claims.clone(), "scope", json!("admin"))).await;
        assert_eq!(e, AuthError::InsufficientScope("tools".into()));
        assert_eq!(e.bearer_error(), Some("insufficient_scope"));
        let mut no_exp = claims.clone();
        no_exp.as_object_mut().unwrap().remove("exp");
        let e = check(no_exp).await;
        assert!(
            matches!(&e, AuthError::Invalid(m) if m.contains("exp")),
            "{e}"
        );
        let mut no_aud = claims.clone();
        no_aud.as_object_mut().unwrap().remove("aud");
        let e = check(no_aud).await;
        assert!(
            matches!(&e, AuthError::Invalid(m) if m.contains("aud")),
            "{e}"
        );
        // Signed by another key under k1's kid.
        let e = v.verify(&sign(&claims, KEY_2, "k1")).await.unwrap_err();
        assert!(
            matches!(&e, AuthError::Invalid(m) if m.contains("signature")),
            "{e}"
        );
    }

    #[tokio::test]
    async fn alg_none_and_hmac_refused() {
        let issuer = Issuer::start(vec![public_jwk(KEY_1, "k1")]).await;
        let v = issuer.verifier(30);
        let good = sign(&issuer.claims(), KEY_1, "k1");
        let payload = good.split('.').nth(1).unwrap();
        // {"alg":"none","typ":"JWT","kid":"k1"}
        let none = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIiwia2lkIjoiazEifQ.{payload}.");
        assert!(matches!(v.verify(&none).await, Err(AuthError::Invalid(m)) if m.contains("none")));
        let none = format!("eyJhbGciOiJub25lIiwidHlwIjoiSldUIiwia2lkIjoiazEifQ.{payload}.xx");
        assert!(matches!(v.verify(&none).await, Err(AuthError::Invalid(_))));
        // HS256 "signed" with the public key's bytes (the classic confusion).
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        let secret = EncodingKey::from_secret(b"public key bytes as a secret").unwrap();
        let hs = jsonwebtoken::encode(&header, &issuer.claims(), &secret).unwrap();
        assert!(matches!(v.verify(&hs).await, Err(AuthError::Invalid(m)) if m.contains("HS256")));
        assert!(matches!(
            v.verify("a.b.c").await,
            Err(AuthError::Invalid(_))
        ));
        assert_eq!(
            issuer.fetches(),
            0,
            "nothing fetched for a malformed, none or HS token"
        );
        // A JWK that says it is for ES384 does not check an ES256 token.
        let mut jwk = public_jwk(KEY_1, "k1");
        jwk["alg"] = json!("ES384");
        let issuer = Issuer::start(vec![jwk]).await;
        let v = issuer.verifier(30);
        let token = sign(&issuer.claims(), KEY_1, "k1");
        assert!(matches!(v.verify(&token).await, Err(AuthError::Invalid(_))));
    }

    #[tokio::test]
    async fn unknown_kid_refetches_at_most_once_per_interval() {
        let issuer = Issuer::start(vec![public_jwk(KEY_1, "k1")]).await;
        let v = issuer.verifier(30);
        let fast = issuer.verifier(1);
        let claims = issuer.claims();
        let old = sign(&claims, KEY_1, "k1");
        v.verify(&old).await.unwrap();
        fast.verify(&old).await.unwrap();
        assert_eq!(issuer.fetches(), 2);
        // The issuer rotates in k2: too soon after the first fetch, a token
        // signed by it is refused without a fetch, and so is a flood of them.
        issuer.set_keys(vec![public_jwk(KEY_1, "k1"), public_jwk(KEY_2, "k2")]);
        let new = sign(&claims, KEY_2, "k2");
        for _ in 0..20 {
            let e = v.verify(&new).await.unwrap_err();
            assert!(
                matches!(&e, AuthError::Invalid(m) if m.contains("k2")),
                "{e}"
            );
        }
        assert_eq!(issuer.fetches(), 2);
        // With a short interval, once it has passed, the unknown kid triggers
        // one refetch.
        tokio::time::sleep(Duration::from_millis(1100)).await;
        fast.verify(&new).await.unwrap();
        assert_eq!(issuer.fetches(), 3);
        let v = fast;
        // k1 rotates out: still cached until a refetch, refused after one.
        issuer.set_keys(vec![public_jwk(KEY_2, "k2")]);
        v.verify(&old).await.unwrap();
        tokio::time::sleep(Duration::from_millis(1100)).await;
        let e = v.verify(&sign(&claims, KEY_1, "k9")).await.unwrap_err();
        assert!(
            matches!(&e, AuthError::Invalid(m) if m.contains("k9")),
            "{e}"
        );
        assert_eq!(issuer.fetches(), 4);
        let e = v.verify(&old).await.unwrap_err();
        assert!(
            matches!(&e, AuthError::Invalid(m) if m.contains("k1")),
            "{e}"
        );
        v.verify(&new).await.unwrap();
        assert_eq!(issuer.fetches(), 4);
    }

    #[tokio::test]
    async fn concurrent_unknown_kids_share_one_fetch() {
        let issuer = Issuer::start(vec![public_jwk(KEY_1, "k1")]).await;
        let v = issuer.verifier(30);
        let token = sign(&issuer.claims(), KEY_1, "k1");
        let all = futures_join(v.clone(), token, 16).await;
        assert!(all.iter().all(Result::is_ok));
        assert_eq!(issuer.fetches(), 1);
    }

    async fn futures_join(
        v: OAuthVerifier,
        token: String,
        n: usize,
    ) -> Vec<Result<Principal, AuthError>> {
        let handles: Vec<_> = (0..n)
            .map(|_| {
                let (v, t) = (v.clone(), token.clone());
                tokio::spawn(async move { v.verify(&t).await })
            })
            .collect();
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    }

    #[tokio::test]
    async fn issuer_down_is_unavailable() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        drop(listener);
        let v = OAuthVerifier::new(OAuthConfig::new(&url, RESOURCE)).unwrap();
        let now = jsonwebtoken::get_current_timestamp();
        let claims = json!({"iss": url, "aud": RESOURCE, "sub": "x", "exp": now + 60});
        let token = sign(&claims, KEY_1, "k1");
        let e = v.verify(&token).await.unwrap_err();
        assert!(matches!(&e, AuthError::Unavailable(_)), "{e}");
        assert_eq!(e.bearer_error(), None);
        assert!(!e.to_string().contains(&token));
        // Again, within the interval: still unavailable, from memory.
        assert!(matches!(
            v.verify(&token).await,
            Err(AuthError::Unavailable(_))
        ));
    }

    #[test]
    fn config_validation() {
        let ok = OAuthConfig::new("https://auth.example.com", "https://mcp.example.com/mcp");
        ok.validate().unwrap();
        OAuthConfig::new("http://127.0.0.1:9000", "http://localhost:8765/mcp")
            .validate()
            .unwrap();
        OAuthConfig::new("http://[::1]:9000", "http://127.0.0.1/mcp")
            .validate()
            .unwrap();
        let e = OAuthConfig::new("http://auth.example.com", "https://mcp.example.com")
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("https") && e.contains("loopback"), "{e}");
        let e = OAuthConfig::new("ftp://auth.example.com", "https://x")
            .validate()
            .unwrap_err();
        assert!(e.to_string().contains("`ftp:`"), "{e}");
        assert!(OAuthConfig::new("auth.example.com", "https://x")
            .validate()
            .is_err());
        assert!(OAuthConfig::new("https://a", "https://x/mcp#frag")
            .validate()
            .is_err());
        let mut c = ok.clone();
        c.required_scopes = vec!["two words".into()];
        assert!(c.validate().is_err());
        let mut c = ok.clone();
        c.jwks_uri = Some("http://keys.example.com/jwks".into());
        assert!(c.validate().is_err());
        assert!(OAuthVerifier::new(c).is_err());
    }

    #[test]
    fn metadata_and_discovery_urls() {
        let mut c = OAuthConfig::new("https://auth.example.com", "https://mcp.example.com/mcp");
        c.required_scopes = vec!["tools".into()];
        let v = OAuthVerifier::new(c).unwrap();
        assert_eq!(
            v.protected_resource_metadata(),
            json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://auth.example.com"],
                "scopes_supported": ["tools"],
                "bearer_methods_supported": ["header"],
            })
        );
        assert_eq!(
            v.resource_metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            discovery_urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            discovery_urls("https://auth.example.com/tenant1"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn bearer_parsing_and_shape() {
        assert_eq!(bearer_token(None), Err(AuthError::Missing));
        assert_eq!(bearer_token(Some("  ")), Err(AuthError::Missing));
        assert_eq!(bearer_token(Some("Bearer abc")), Ok("abc"));
        assert_eq!(bearer_token(Some("bEaReR   abc ")), Ok("abc"));
        assert!(matches!(
            bearer_token(Some("Basic abc")),
            Err(AuthError::Invalid(_))
        ));
        assert!(matches!(
            bearer_token(Some("Bearer")),
            Err(AuthError::Invalid(_))
        ));
        assert!(matches!(
            bearer_token(Some("Bearer a b")),
            Err(AuthError::Invalid(_))
        ));
        assert!(looks_like_jwt("eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln"));
        assert!(looks_like_jwt("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."));
        assert!(!looks_like_jwt("alice-token-0123456789"));
        assert!(!looks_like_jwt("eyJ.a.b.c"));
        assert!(!looks_like_jwt("eyJhb+.eyJ.x"));
    }

    #[tokio::test]
    async fn authenticator_tries_static_tokens_then_oauth() {
        let issuer = Issuer::start(vec![public_jwk(KEY_1, "k1")]).await;
        let tokens = StaticTokens::parse("ops:ops-token-0123456789abcdef").unwrap();
        let a = Authenticator::new(Some(tokens.clone()), Some(issuer.verifier(30)));
        assert!(a.is_configured());
        assert!(!Authenticator::default().is_configured());
        assert_eq!(a.authenticate(None).await, Err(AuthError::Missing));
        let p = a
            .authenticate(Some("Bearer ops-token-0123456789abcdef"))
            .await
            .unwrap();
        assert_eq!((p.name.as_str(), p.method), ("ops", AuthMethod::Token));
        let jwt = sign(&issuer.claims(), KEY_1, "k1");
        let p = a
            .authenticate(Some(&format!("bearer {jwt}")))
            .await
            .unwrap();
        assert_eq!(
            (p.name.as_str(), p.method),
            ("alice-bot", AuthMethod::Oauth)
        );
        let e = a
            .authenticate(Some("Bearer nope-nope-nope"))
            .await
            .unwrap_err();
        assert!(matches!(e, AuthError::Invalid(_)));
        assert_eq!(
            issuer.fetches(),
            1,
            "a non-JWT token never reaches the issuer"
        );
        let only_static = Authenticator::new(Some(tokens), None);
        let e = only_static
            .authenticate(Some(&format!("Bearer {jwt}")))
            .await
            .unwrap_err();
        assert!(matches!(e, AuthError::Invalid(_)));
    }
}
