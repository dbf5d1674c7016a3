//! `OAuthVerifier` against a real authorization server: panva's
//! oidc-provider (tests/oauth-npm/server.mjs, installed under
//! target/oauth-npm by `make oauth-server`), with tokens got by the
//! client_credentials grant over HTTP.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;
use toolrag_auth::{
    AuthError, AuthMethod, Authenticator, OAuthConfig, OAuthVerifier, StaticTokens,
};

const RESOURCE: &str = "http://127.0.0.1:8765/mcp";

fn server_script() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let installed = root.join("target/oauth-npm");
    assert!(
        installed.join("node_modules/oidc-provider").exists()
            && installed.join("server.mjs").exists(),
        "{} is missing: run `make oauth-server`",
        installed.display()
    );
    installed.join("server.mjs")
}

/// The running oidc-provider; killed on drop.
struct Server {
    child: Child,
    issuer: String,
}

impl Server {
    fn start(port: u16, keys: &Path) -> Server {
        let mut child = Command::new("node")
            .arg(server_script())
            .args([
                "--port",
                &port.to_string(),
                "--resource",
                RESOURCE,
                "--keys",
            ])
            .arg(keys)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node (Node.js 20+) on PATH");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let issuer = line
            .trim()
            .strip_prefix("ready ")
            .unwrap_or_else(|| panic!("server.mjs did not start: {line:?}"))
            .to_string();
        Server { child, issuer }
    }

    fn stop(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn form_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// An access token for `client` by client credentials (client_secret_basic).
async fn token(issuer: &str, client: &str, scope: &str, resource: &str) -> String {
    let body = format!(
        "grant_type=client_credentials&scope={}&resource={}",
        form_encode(scope),
        form_encode(resource)
    );
    let response = reqwest::Client::new()
        .post(format!("{issuer}/token"))
        .basic_auth(client, Some(format!("{client}-secret-0123456789")))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = response.status();
    let json: Value = serde_json::from_slice(&response.bytes().await.unwrap()).unwrap();
    assert!(status.is_success(), "token request failed: {status} {json}");
    assert_eq!(json["token_type"], "Bearer");
    json["access_token"].as_str().unwrap().to_string()
}

fn verifier(issuer: &str) -> OAuthVerifier {
    let mut config = OAuthConfig::new(issuer, RESOURCE);
    config.required_scopes = vec!["tools".into()];
    config.jwks_refetch_min_seconds = 1;
    OAuthVerifier::new(config).unwrap()
}

#[tokio::test]
async fn tokens_from_oidc_provider() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let server = Server::start(port, &dir.path().join("keys-1.json"));
    let issuer = server.issuer.clone();
    assert_eq!(issuer, format!("http://127.0.0.1:{port}"));
    let v = verifier(&issuer);

    // A valid token: the principal, its groups and scopes.
    let alice = token(&issuer, "alice-bot", "tools admin", RESOURCE).await;
    let p = v.verify(&alice).await.unwrap();
    assert_eq!(p.name, "alice-bot");
    assert_eq!(p.client_id.as_deref(), Some("alice-bot"));
    assert_eq!(p.groups, ["shop"]);
    assert_eq!(p.scopes, ["tools", "admin"]);
    assert_eq!(p.method, AuthMethod::Oauth);
    assert!(p.matches("group:shop"));
    let bob = token(&issuer, "bob-bot", "tools", RESOURCE).await;
    let p = v.verify(&bob).await.unwrap();
    assert_eq!(
        (p.name.as_str(), p.groups.as_slice()),
        ("bob-bot", &["support".to_string()][..])
    );

    // Through the Authenticator, beside static tokens.
    let tokens = StaticTokens::parse("ops:ops-token-0123456789abcdef").unwrap();
    let auth = Authenticator::new(Some(tokens), Some(v.clone()));
    let p = auth
        .authenticate(Some(&format!("Bearer {alice}")))
        .await
        .unwrap();
    assert_eq!(p.name, "alice-bot");
    assert_eq!(auth.authenticate(None).await, Err(AuthError::Missing));

    // Without the required scope.
    let carol = token(&issuer, "carol-bot", "admin", RESOURCE).await;
    assert_eq!(
        v.verify(&carol).await,
        Err(AuthError::InsufficientScope("tools".into()))
    );

    // A token for another resource: refused for its audience.
    let other = token(&issuer, "alice-bot", "tools", "http://127.0.0.1:9999/other").await;
    let e = v.verify(&other).await.unwrap_err();
    assert!(
        matches!(&e, AuthError::Invalid(m) if m.contains("audience")),
        "{e}"
    );
    assert!(!e.to_string().contains(&other));

    // Restart with a rotated key (a new file, a new kid): a new token is
    // accepted after a refetch; a token of the old key is refused.
    server.stop();
    let server = Server::start(port, &dir.path().join("keys-2.json"));
    assert_eq!(server.issuer, issuer);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let rotated = token(&issuer, "alice-bot", "tools", RESOURCE).await;
    let p = v.verify(&rotated).await.unwrap();
    assert_eq!(p.name, "alice-bot");
    let e = v.verify(&alice).await.unwrap_err();
    assert!(
        matches!(&e, AuthError::Invalid(m) if m.contains("signing key")),
        "{e}"
    );

    // The issuer down: a cached key still checks; an unknown kid is
    // Unavailable (not Invalid, not a panic), and so is everything for a
    // verifier that never fetched.
    server.stop();
    v.verify(&rotated).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let e = v.verify(&alice).await.unwrap_err();
    assert!(matches!(&e, AuthError::Unavailable(_)), "{e}");
    assert_eq!(e.bearer_error(), None);
    let fresh = verifier(&issuer);
    let e = fresh.verify(&rotated).await.unwrap_err();
    assert!(matches!(&e, AuthError::Unavailable(_)), "{e}");
}
