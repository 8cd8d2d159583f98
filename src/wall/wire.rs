//! Framing the wall's handlers share: what a request's body is, and how a Server-Sent Event is written.

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::CONTENT_TYPE;
use hyper::Request;

/// Whether a request says its body is JSON (the wall's POSTs take nothing else).
pub fn is_json(req: &Request<Incoming>) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/json"))
}

/// A `text/event-stream` frame.
pub fn sse_event(name: &str, data: &str) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}
