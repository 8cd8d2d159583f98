//! Request routing for the control, transfer and data planes, the system API key check, and JSON error bodies.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::json;

use super::{control, transfer, ws, App};

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

/// `Authorization: Bearer <key>` when a key is configured (protocol §3). `Err` is the 401 to send.
pub fn check_api_key<B>(app: &App, req: &Request<B>) -> Result<(), Box<Response<Body>>> {
    let Some(key) = app.cfg.api_key.as_deref() else { return Ok(()) };
    let presented = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer ")))
        .map(str::trim);
    match presented {
        Some(p) if constant_time_eq(p.as_bytes(), key.as_bytes()) => Ok(()),
        Some(_) => Err(Box::new(error(StatusCode::UNAUTHORIZED, "unauthorized", "the system API key is wrong"))),
        None => Err(Box::new(error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this endpoint requires Authorization: Bearer <system API key>",
        ))),
    }
}

fn method_not_allowed(allow: &'static str) -> Response<Body> {
    let mut r = error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", &format!("use {allow} on this path"));
    r.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    r
}

pub async fn route(app: Arc<App>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    let get = method == Method::GET || method == Method::HEAD;
    let resp = match path.as_str() {
        "/connector-card.json" if get => control::card(&app),
        "/skill.md" if get => control::skill(),
        "/health" if get => match check_api_key(&app, &req) {
            Ok(()) => control::health(&app).await,
            Err(r) => *r,
        },
        "/metrics" if get => match check_api_key(&app, &req) {
            Ok(()) => control::metrics(&app),
            Err(r) => *r,
        },
        "/ws" if method == Method::GET => ws::upgrade(app.clone(), req),
        "/files/uploads" if method == Method::POST => transfer::upload(&app, req).await,
        "/files/uploads" => method_not_allowed("POST"),
        p if p.starts_with("/files/refs/") => match &p["/files/refs/".len()..] {
            file_ref if get => transfer::download(&app, &req, file_ref).await,
            _ => method_not_allowed("GET, HEAD"),
        },
        "/connector-card.json" | "/skill.md" | "/health" | "/metrics" => method_not_allowed("GET, HEAD"),
        "/ws" => method_not_allowed("GET"),
        p if crate::wall::owns(p) => crate::wall::route(&app, req).await,
        _ => error(StatusCode::NOT_FOUND, "not_found", &format!("no endpoint at {path}")),
    };
    tracing::debug!(%method, %path, status = resp.status().as_u16(), "http");
    Ok(resp)
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
