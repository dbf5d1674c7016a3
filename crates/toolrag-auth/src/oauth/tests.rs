//! The verifier against an in-test JWKS server with generated keys.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use jsonwebtoken::{EncodingKey, Header};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::{bearer_token, looks_like_jwt, Authenticator, StaticTokens};

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

/// `refresh_keys` (SIGHUP) fetches at once: a key the issuer withdrew stops
/// verifying without waiting for the cache to age; a failed refresh keeps
/// the keys there are.
#[tokio::test]
async fn refresh_keys_drops_a_withdrawn_key_at_once_and_keeps_keys_on_failure() {
    let issuer = Issuer::start(vec![public_jwk(KEY_1, "k1"), public_jwk(KEY_2, "k2")]).await;
    let v = issuer.verifier(30);
    let claims = issuer.claims();
    let (one, two) = (sign(&claims, KEY_1, "k1"), sign(&claims, KEY_2, "k2"));
    v.verify(&one).await.unwrap();
    issuer.set_keys(vec![public_jwk(KEY_2, "k2")]);
    v.verify(&one).await.expect("cached until a refresh");
    assert_eq!(v.refresh_keys().await, Ok(1));
    assert!(v.verify(&one).await.is_err(), "withdrawn");
    *issuer.jwks.lock().unwrap() = json!({"not": "a JWKS"});
    let e = v.refresh_keys().await.unwrap_err();
    assert!(e.contains("not a JWKS"), "{e}");
    v.verify(&two).await.expect("the old keys stay");
}
