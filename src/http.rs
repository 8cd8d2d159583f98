//! HTTP primitives every surface answers with: the response body type, a whole body, JSON answers and errors,
//! and the constant-time comparison of secrets. No routing and no state: the server (`server/`) and the operator's
//! wall (`wall/`) both build on this, so neither has to import the other for it.

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::json;

pub type Body = BoxBody<Bytes, std::io::Error>;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).map_err(|never| match never {}).boxed()
}

/// A small JSON error body: `{"error": {"code": ..., "message": ...}}`.
pub fn error(status: StatusCode, code: &str, message: &str) -> Response<Body> {
    let body = json!({"error": {"code": code, "message": message}}).to_string();
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

pub fn json_response(status: StatusCode, body: String) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

/// Compares in time independent of where the inputs first differ, so response timing leaks nothing about the key.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = (a.len() ^ b.len()) as u8 | ((a.len() ^ b.len()) >> 8) as u8;
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0xff);
        diff |= x ^ y;
    }
    diff == 0 && a.len() == b.len()
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn constant_time_eq_is_equality() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secret", b"secreT"));
        assert!(!constant_time_eq(b"secret", b"secret1"));
        assert!(!constant_time_eq(b"", b"x"));
        assert!(constant_time_eq(b"", b""));
        // Lengths that differ by a multiple of 256 must not compare equal.
        assert!(!constant_time_eq(&[0u8; 256], b""));
    }
}
