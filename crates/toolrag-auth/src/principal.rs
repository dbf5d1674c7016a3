//! The principal: who a request comes from.

use serde::Serialize;

/// How a principal was authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum AuthMethod {
    /// No authentication: stdio, or HTTP on loopback without auth configured.
    Local,
    /// A static bearer token from the tokens file.
    Token,
    /// An OAuth access token (a JWT).
    Oauth,
}

/// Who a request comes from, as a policy names them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Principal {
    /// The name in audit lines: the token's name, or the JWT's `sub`
    /// (its `client_id` when it has no subject).
    pub name: String,
    /// The JWT's `sub`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// The JWT's `client_id` (or `azp`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// The values of the group claim.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// The scopes granted.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// How it was authenticated.
    pub method: AuthMethod,
}

impl Principal {
    /// The one principal of an unauthenticated server (stdio, or loopback
    /// HTTP without auth): `local`.
    pub fn local() -> Principal {
        Principal {
            name: "local".into(),
            subject: None,
            client_id: None,
            groups: Vec::new(),
            scopes: Vec::new(),
            method: AuthMethod::Local,
        }
    }

    /// The principal of a static token named `name`.
    pub fn token(name: impl Into<String>) -> Principal {
        Principal {
            name: name.into(),
            method: AuthMethod::Token,
            ..Principal::local()
        }
    }

    /// The principal's identity as a key (approval states, rate limits):
    /// how it authenticated and its name, so that a token named like an
    /// OAuth subject is not the same principal.
    pub fn key(&self) -> String {
        let method = match self.method {
            AuthMethod::Local => "local",
            AuthMethod::Token => "token",
            AuthMethod::Oauth => "oauth",
        };
        format!("{method}:{}", self.name)
    }

    /// Whether a policy's `selector` names this principal: `group:<value>`
    /// matches a group claim value; anything else matches the name, the
    /// subject or the client id exactly.
    pub fn matches(&self, selector: &str) -> bool {
        if let Some(group) = selector.strip_prefix("group:") {
            return self.groups.iter().any(|g| g == group);
        }
        self.name == selector
            || self.subject.as_deref() == Some(selector)
            || self.client_id.as_deref() == Some(selector)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors() {
        let mut p = Principal::token("bob");
        p.groups = vec!["shop".into()];
        p.client_id = Some("ci-bot".into());
        assert!(p.matches("bob"));
        assert!(p.matches("group:shop"));
        assert!(p.matches("ci-bot"));
        assert!(!p.matches("group:bob"));
        assert!(!p.matches("shop"));
        assert!(!p.matches("alice"));
    }
}
