//! Request validation shared by the front ends: `k` and the query text.

use crate::error::{ApiError, UserCode};
use crate::{DEFAULT_K, MAX_K, MAX_QUERY_CHARS};

/// `k`, defaulted to [`DEFAULT_K`] and checked against 1..=[`MAX_K`].
pub fn check_k(k: Option<i64>) -> Result<usize, ApiError> {
    match k {
        None => Ok(DEFAULT_K),
        Some(k) if (1..=MAX_K as i64).contains(&k) => Ok(k as usize),
        Some(k) => Err(ApiError::user(
            UserCode::InvalidK,
            format!("k must be between 1 and {MAX_K}, got {k}"),
        )),
    }
}

/// The query must have words and be at most [`MAX_QUERY_CHARS`] characters
/// (Unicode scalar values, as JSON Schema's `maxLength` counts them).
pub fn check_query(query: &str) -> Result<(), ApiError> {
    // A query of at most MAX_QUERY_CHARS bytes has at most as many characters.
    if query.len() > MAX_QUERY_CHARS {
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(ApiError::user(
                UserCode::QueryTooLong,
                format!("the query is {chars} characters; the limit is {MAX_QUERY_CHARS}"),
            ));
        }
    }
    if query.trim().is_empty() {
        return Err(ApiError::user(UserCode::EmptyQuery, "the query is empty"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApiCode;

    #[test]
    fn limits() {
        let code = |e: ApiError| e.code().as_str();
        assert_eq!(check_k(None).unwrap(), DEFAULT_K);
        assert_eq!(code(check_k(Some(0)).unwrap_err()), "invalid_k");
        assert_eq!(code(check_k(Some(101)).unwrap_err()), "invalid_k");
        assert_eq!(code(check_k(Some(-1)).unwrap_err()), "invalid_k");
        assert_eq!(check_k(Some(100)).unwrap(), 100);
        assert_eq!(code(check_query(" \n").unwrap_err()), "empty_query");
    }

    #[test]
    fn the_query_cap_counts_characters_not_bytes() {
        // 4096 two-byte characters: 8192 bytes, within the cap.
        let at_cap = "é".repeat(MAX_QUERY_CHARS);
        assert!(check_query(&at_cap).is_ok());
        let over = "é".repeat(MAX_QUERY_CHARS + 1);
        let e = check_query(&over).unwrap_err();
        assert_eq!(e.code(), ApiCode::User(UserCode::QueryTooLong));
        assert_eq!(
            e.message(),
            format!("the query is 4097 characters; the limit is {MAX_QUERY_CHARS}")
        );
        assert!(check_query(&"a".repeat(MAX_QUERY_CHARS)).is_ok());
        assert!(check_query(&"a".repeat(MAX_QUERY_CHARS + 1)).is_err());
    }
}
