//! Who a request comes from: a [`Principal`], from a bearer token.
//!
//! Two kinds of credential are understood:
//! - **static tokens** ([`StaticTokens`]): a file of `name:token` lines (or
//!   `name:sha256:<hex>` with the token hashed), for a small team;
//! - **OAuth 2.1 access tokens** ([`OAuthVerifier`]): JWTs from an authorization
//!   server, checked against its JWKS, for the audience of this resource
//!   (RFC 8707), with expiry and scopes, as the MCP authorization spec asks
//!   of a resource server.
//!
//! Both can be read again while a server runs ([`Reloader`]): the tokens
//! file when it changes or on `SIGHUP`, the issuer's keys on `SIGHUP`.
//!
//! The crate knows nothing of MCP or of the gateway's policy: it says who is
//! asking, and the front ends decide what that principal may do.
//!
//! It reaches the network for OAuth only: [`OAuthVerifier`] fetches the
//! issuer's JWKS (and its metadata, to find it, unless `jwks_uri` is given),
//! with reqwest, on the first token, again for a key it does not know (at
//! most every `jwks_refetch_min_seconds`) and on `SIGHUP`. Static tokens are
//! a local file.
#![warn(missing_docs)]

mod authenticator;
mod oauth;
mod principal;
mod reload;
mod tokens;

pub use authenticator::{bearer_token, looks_like_jwt, Authenticator};
pub use oauth::{OAuthConfig, OAuthVerifier};
pub use principal::{AuthMethod, Principal};
pub use reload::{Reloader, RemovedHook, TOKEN_POLL};
pub use tokens::{token_digest, RemovedToken, StaticTokens, TokensReloaded};

use std::path::PathBuf;

/// Why a request is not authenticated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No `Authorization: Bearer` header.
    #[error("this server needs `Authorization: Bearer <token>`")]
    Missing,
    /// A token was given and is not valid (unknown, bad signature, wrong
    /// issuer or audience, malformed). The message says which, without the
    /// token.
    #[error("the bearer token is not valid: {0}")]
    Invalid(String),
    /// The token has expired.
    #[error("the bearer token has expired")]
    Expired,
    /// The token is valid but lacks a scope this resource requires.
    #[error("the bearer token lacks the scope `{0}`")]
    InsufficientScope(String),
    /// The authorization server could not be reached to check the token.
    #[error("the token cannot be checked now: {0}")]
    Unavailable(String),
}

impl AuthError {
    /// The `error` parameter of a `WWW-Authenticate: Bearer` challenge
    /// (RFC 6750 section 3.1), when there is one.
    pub fn bearer_error(&self) -> Option<&'static str> {
        match self {
            AuthError::Missing | AuthError::Unavailable(_) => None,
            AuthError::Invalid(_) | AuthError::Expired => Some("invalid_token"),
            AuthError::InsufficientScope(_) => Some("insufficient_scope"),
        }
    }
}

/// A file of credentials cannot be read or is not well formed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file cannot be read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not well formed.
    #[error("{}:{line}: {message}", path.display())]
    Line {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong, and what to write instead.
        message: String,
    },
    /// A setting is not valid.
    #[error("{0}")]
    Invalid(String),
}
