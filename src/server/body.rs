//! The small-body reader: a request body read whole, bounded in bytes and in time (the wall's JSON, MCP messages).

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::header::HeaderValue;
use hyper::{Response, StatusCode};

use super::log_gate::LogGate;
use crate::http::{error, Body};

/// Reads a small request body (JSON of the wall's API; never an upload) whole: at most `max` bytes, and all of it
/// within `deadline` of the call. Why a deadline: hyper's header timeout ends with the head, and a client that
/// announces a body and never sends it would otherwise hold its connection (and a slot of the per-address and
/// global connection caps) for as long as it likes. `Err` is the 408/413/400 to send; the connection is closed
/// after it (hyper never reuses a connection whose body was not read to the end).
pub async fn read_small_body(
    body: hyper::body::Incoming,
    max: usize,
    deadline: std::time::Duration,
) -> Result<Bytes, Box<Response<Body>>> {
    match tokio::time::timeout(deadline, http_body_util::Limited::new(body, max).collect()).await {
        Ok(Ok(b)) => Ok(b.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(Box::new(error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_arguments",
            &format!("the request body is larger than {max} bytes"),
        ))),
        Ok(Err(_)) => {
            Err(Box::new(error(StatusCode::BAD_REQUEST, "invalid_arguments", "the request body was cut off")))
        }
        Err(_) => {
            static GATE: LogGate = LogGate::new();
            if let Some(suppressed) = GATE.allow() {
                tracing::info!(deadline_s = deadline.as_secs_f64(), suppressed, "request body not received in time");
            }
            let mut r = error(
                StatusCode::REQUEST_TIMEOUT,
                "request_timeout",
                &format!("the request body did not arrive within {} s", deadline.as_secs_f64()),
            );
            r.headers_mut().insert(hyper::header::CONNECTION, HeaderValue::from_static("close"));
            Err(Box::new(r))
        }
    }
}
