//! The settings of the OAuth resource server, checked.

use std::net::IpAddr;

use reqwest::Url;

use crate::ConfigError;

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
pub(super) fn check_url(what: &str, value: &str) -> Result<Url, ConfigError> {
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

pub(super) fn is_loopback(url: &Url) -> bool {
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
