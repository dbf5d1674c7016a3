//! The bearer token of a request, and whose it is: static tokens first,
//! then OAuth access tokens.

use crate::{AuthError, OAuthVerifier, Principal, StaticTokens};

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
