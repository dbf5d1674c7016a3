//! Checks on a request's head that come before anything reads it: headers
//! that must appear once.
//!
//! A request with two `Authorization` headers, or two `Host` headers, is
//! ambiguous: one layer may read the first and another the last (a proxy in
//! front, a check here, a log line), and "the first one wins" lets a request
//! be authenticated as one caller and be seen as another. Both front ends
//! refuse such a request whole, with `400` in their own error body, before it
//! is authenticated.

use http::{header, HeaderMap, HeaderName};

/// The headers a request may carry at most once, on every front end.
pub const SINGLE_HEADERS: [HeaderName; 2] = [header::AUTHORIZATION, header::HOST];

/// The first of `names` that `headers` carries more than once.
pub fn repeated_header<'a>(headers: &HeaderMap, names: &'a [HeaderName]) -> Option<&'a HeaderName> {
    names
        .iter()
        .find(|name| headers.get_all(*name).iter().nth(1).is_some())
}

/// What a `400` for a repeated `name` says.
pub fn repeated_message(name: &HeaderName) -> String {
    format!("the request has more than one `{name}` header; send exactly one")
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn finds_a_repeated_header() {
        let mut h = HeaderMap::new();
        h.append(header::HOST, HeaderValue::from_static("a"));
        h.append(header::AUTHORIZATION, HeaderValue::from_static("Bearer x"));
        h.append(header::ACCEPT, HeaderValue::from_static("*/*"));
        h.append(header::ACCEPT, HeaderValue::from_static("*/*"));
        assert_eq!(repeated_header(&h, &SINGLE_HEADERS), None);
        h.append(header::AUTHORIZATION, HeaderValue::from_static("Bearer y"));
        assert_eq!(
            repeated_header(&h, &SINGLE_HEADERS),
            Some(&header::AUTHORIZATION)
        );
        assert!(repeated_message(&header::AUTHORIZATION).contains("`authorization`"));
    }
}
