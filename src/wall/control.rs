//! The operator's hands: `POST /api/v1/devices/{id}/takeover`, `…/return` and `…/input` (system key, or a wall
//! session with its CSRF token — checked by the router before these run).
//!
//! Takeover state and its gate on agent calls live in `channels::takeover`; this file is the HTTP side: who the
//! operator is, the input body's validation (every field checked and bounded before anything reaches the
//! phone), and the device calls — the same `input …` shell commands the control tools send, through the same
//! per-device ordered path with a deadline. Every input is audited as `operator.input` with its action and
//! coordinates or key; typed text is recorded, logged and answered as its length only.

use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use serde_json::{json, Map, Value};

use super::session::Principal;
use super::state::{device_id, Wall};
use super::views::takeover_json;
use super::wire::is_json;
use crate::channels::takeover::{Operator, OPERATOR_CHANNEL};
use crate::device::shell::{input_text_chunks, quote};
use crate::device::{DeviceKey, DeviceState};
use crate::http::{error, json_response, Body};
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::server::body::read_small_body;
use crate::server::App;
use crate::tools::input::KEYS;

/// Largest input body (a 1000-character text escaped as JSON fits many times).
const MAX_INPUT_BODY: usize = 16 * 1024;
/// Longest text one input may type (as `android_input_text`).
pub const MAX_TEXT_CHARS: usize = 1000;
/// Deadline of one operator input on the device.
const INPUT_DEADLINE: Duration = Duration::from_secs(20);
/// Longest swipe / long press.
const MAX_GESTURE_MS: i64 = 10_000;

/// The operator a request speaks for; `None` for an open wall without a session (it has no CSRF token, so the
/// router refused it already).
pub fn operator(p: &Principal) -> Option<Operator> {
    match p {
        Principal::Bearer => Some(Operator::ApiKey),
        Principal::Session { id, who, .. } => Some(Operator::Session(id.clone(), who.name.clone())),
        Principal::Open | Principal::Proxy(_) => None,
    }
}

fn status_of(e: &ProtoError) -> StatusCode {
    match e.code {
        ErrorCode::OperatorControl => StatusCode::CONFLICT,
        ErrorCode::PermissionDenied => StatusCode::FORBIDDEN,
        ErrorCode::InvalidArguments | ErrorCode::UnsupportedText => StatusCode::BAD_REQUEST,
        ErrorCode::DeviceOffline | ErrorCode::DeviceUnauthorized => StatusCode::CONFLICT,
        ErrorCode::DeviceTimeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorCode::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_GATEWAY,
    }
}

fn fail(e: &ProtoError) -> Response<Body> {
    let mut r = error(status_of(e), e.code.as_str(), &e.message);
    r.headers_mut().insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("no-store"));
    r
}

fn ok(v: Value) -> Response<Body> {
    let mut r = json_response(StatusCode::OK, v.to_string());
    r.headers_mut().insert(hyper::header::CACHE_CONTROL, hyper::header::HeaderValue::from_static("no-store"));
    r
}

fn online(app: &App, key: &DeviceKey) -> Result<(), ProtoError> {
    match app.hub.backend().info(key).map(|d| d.state) {
        Some(DeviceState::Online) => Ok(()),
        Some(DeviceState::Unauthorized) => {
            Err(ProtoError::new(ErrorCode::DeviceUnauthorized, "the device has not authorised this computer"))
        }
        _ => Err(ProtoError::new(ErrorCode::DeviceOffline, "the device is not online")),
    }
}

/// `POST …/takeover`: the agent's calls fail with `operator_control` from now on.
pub async fn takeover(app: &App, w: &Wall, key: &DeviceKey, p: &Principal) -> Response<Body> {
    let Some(by) = operator(p) else {
        return fail(&ProtoError::new(ErrorCode::PermissionDenied, "log in on the wall first"));
    };
    if let Err(e) = online(app, key) {
        return fail(&e);
    }
    match app.hub.operator_takeover(key, by.clone(), w.cfg.takeover_idle).await {
        Ok(t) => ok(json!({"device_id": device_id(key), "takeover": takeover_json(&t, Some(&by))})),
        Err(e) => fail(&e),
    }
}

/// `POST …/return` (body empty or `{"note": "…"}`): the agent may act again; the note answers its open request for
/// a person, if any (`tools::human`).
pub async fn give_back(app: &App, key: &DeviceKey, p: &Principal, req: Request<Incoming>) -> Response<Body> {
    let Some(by) = operator(p) else {
        return fail(&ProtoError::new(ErrorCode::PermissionDenied, "log in on the wall first"));
    };
    let body = match read_small_body(req.into_body(), MAX_INPUT_BODY, app.cfg.limits.body_timeout).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let note = match parse_return(&body) {
        Ok(n) => n,
        Err(e) => return fail(&e),
    };
    let pending = app.hub.registry().human().view(key).is_some();
    match app.hub.operator_return(key, &by, note) {
        Ok(returned) => ok(json!({"device_id": device_id(key), "returned": returned,
                                  "human_request_answered": returned && pending})),
        Err(e) => fail(&e),
    }
}

/// A return body: nothing, `{}` or `{"note": string}` (≤ [`MAX_NOTE`](crate::tools::human::MAX_NOTE) characters,
/// cleaned of control and bidi characters: the agent's model reads it, a terminal may print it). Empty → no note.
pub fn parse_return(body: &[u8]) -> Result<Option<String>, ProtoError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let v: Value = serde_json::from_slice(body).map_err(|_| invalid("the return body is not valid JSON"))?;
    let Value::Object(m) = v else { return Err(invalid("the return body must be a JSON object")) };
    if m.keys().any(|k| k != "note") {
        return Err(invalid("the return body takes only `note`"));
    }
    match m.get("note") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(n)) if n.chars().count() <= crate::tools::human::MAX_NOTE => {
            let n = crate::device::text::phone_text(n, crate::tools::human::MAX_NOTE);
            Ok(Some(n).filter(|n| !n.is_empty()))
        }
        Some(Value::String(_)) => {
            Err(invalid(format!("`note` is at most {} characters", crate::tools::human::MAX_NOTE)))
        }
        Some(_) => Err(invalid("`note` must be a string")),
    }
}

/// One validated operator input.
#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    Tap { x: i64, y: i64 },
    Swipe { x1: i64, y1: i64, x2: i64, y2: i64, ms: i64 },
    LongPress { x: i64, y: i64, ms: i64 },
    Key(String),
    Text(String),
}

fn invalid(m: impl Into<String>) -> ProtoError {
    ProtoError::new(ErrorCode::InvalidArguments, m)
}

/// Parses and checks an input body: a closed object per action, integers in range, a key from the tools' list,
/// printable ASCII text of 1..=[`MAX_TEXT_CHARS`] characters (what `input text` can type; the page tells the
/// operator). Coordinates are checked against the screen later, in the orientation the phone has then.
pub fn parse_input(body: &[u8]) -> Result<Input, ProtoError> {
    let v: Value = serde_json::from_slice(body).map_err(|_| invalid("the input body is not valid JSON"))?;
    let Value::Object(m) = v else { return Err(invalid("the input body must be a JSON object")) };
    let action = m.get("action").and_then(Value::as_str).unwrap_or("");
    let allowed: &[&str] = match action {
        "tap" => &["action", "x", "y"],
        "swipe" => &["action", "x1", "y1", "x2", "y2", "duration_ms"],
        "long_press" => &["action", "x", "y", "duration_ms"],
        "key" => &["action", "key"],
        "text" => &["action", "text"],
        _ => return Err(invalid("`action` must be one of tap, swipe, long_press, key, text")),
    };
    if let Some(k) = m.keys().find(|k| !allowed.contains(&k.as_str())) {
        let k: String = k.chars().take(40).collect();
        return Err(invalid(format!("unknown field {k:?} for action {action} (allowed: {})", allowed.join(", "))));
    }
    let int = |name: &str, lo: i64, hi: i64, default: Option<i64>| -> Result<i64, ProtoError> {
        match m.get(name) {
            None | Some(Value::Null) => default.ok_or_else(|| invalid(format!("`{name}` is required"))),
            Some(v) => match v.as_i64() {
                Some(n) if (lo..=hi).contains(&n) => Ok(n),
                _ => Err(invalid(format!("`{name}` must be an integer in {lo}..={hi}"))),
            },
        }
    };
    const P: i64 = 100_000;
    Ok(match action {
        "tap" => Input::Tap { x: int("x", 0, P, None)?, y: int("y", 0, P, None)? },
        "swipe" => Input::Swipe {
            x1: int("x1", 0, P, None)?,
            y1: int("y1", 0, P, None)?,
            x2: int("x2", 0, P, None)?,
            y2: int("y2", 0, P, None)?,
            ms: int("duration_ms", 0, MAX_GESTURE_MS, Some(300))?,
        },
        "long_press" => Input::LongPress {
            x: int("x", 0, P, None)?,
            y: int("y", 0, P, None)?,
            ms: int("duration_ms", 400, MAX_GESTURE_MS, Some(800))?,
        },
        "key" => {
            let key = m.get("key").and_then(Value::as_str).unwrap_or("");
            if !KEYS.contains(&key) {
                return Err(invalid(format!("`key` must be one of {}", KEYS.join(", "))));
            }
            Input::Key(key.to_owned())
        }
        _ => {
            let Some(text) = m.get("text").and_then(Value::as_str) else {
                return Err(invalid("`text` must be a string"));
            };
            let n = text.chars().count();
            if n == 0 || n > MAX_TEXT_CHARS {
                return Err(invalid(format!("`text` must have 1..={MAX_TEXT_CHARS} characters (it has {n})")));
            }
            if !text.chars().all(|c| c.is_ascii() && !c.is_ascii_control()) {
                return Err(ProtoError::new(
                    ErrorCode::UnsupportedText,
                    "the wall types printable ASCII only (`input text`); other characters need an agent's \
                     android_input_text with the ADB Keyboard IME",
                ));
            }
            Input::Text(text.to_owned())
        }
    })
}

impl Input {
    fn action(&self) -> &'static str {
        match self {
            Input::Tap { .. } => "tap",
            Input::Swipe { .. } => "swipe",
            Input::LongPress { .. } => "long_press",
            Input::Key(_) => "key",
            Input::Text(_) => "text",
        }
    }

    /// Points to check against the screen.
    fn points(&self) -> Vec<(i64, i64)> {
        match *self {
            Input::Tap { x, y } | Input::LongPress { x, y, .. } => vec![(x, y)],
            Input::Swipe { x1, y1, x2, y2, .. } => vec![(x1, y1), (x2, y2)],
            _ => Vec::new(),
        }
    }

    /// The shell command: the same `input …` lines the control tools send (`tools/input.rs`).
    fn command(&self) -> String {
        match self {
            Input::Tap { x, y } => format!("input tap {x} {y}"),
            Input::Swipe { x1, y1, x2, y2, ms } => format!("input swipe {x1} {y1} {x2} {y2} {ms}"),
            Input::LongPress { x, y, ms } => format!("input swipe {x} {y} {x} {y} {ms}"),
            Input::Key(k) => format!("input keyevent KEYCODE_{k}"),
            Input::Text(t) => {
                input_text_chunks(t).iter().map(|c| format!("input text {}", quote(c))).collect::<Vec<_>>().join(" && ")
            }
        }
    }

    /// What the audit and the answer record: never the text, only its length.
    fn record(&self) -> Map<String, Value> {
        let v = match self {
            Input::Tap { x, y } => json!({"action": "tap", "x": x, "y": y}),
            Input::Swipe { x1, y1, x2, y2, ms } => {
                json!({"action": "swipe", "x1": x1, "y1": y1, "x2": x2, "y2": y2, "duration_ms": ms})
            }
            Input::LongPress { x, y, ms } => json!({"action": "long_press", "x": x, "y": y, "duration_ms": ms}),
            Input::Key(k) => json!({"action": "key", "key": k}),
            Input::Text(t) => json!({"action": "text", "chars": t.chars().count()}),
        };
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}

/// `POST …/input`: one tap, swipe, long press, key or text from the operator who holds the phone.
pub async fn input(app: &App, w: &Wall, key: &DeviceKey, p: &Principal, req: Request<Incoming>) -> Response<Body> {
    let Some(by) = operator(p) else {
        return fail(&ProtoError::new(ErrorCode::PermissionDenied, "log in on the wall first"));
    };
    if !is_json(&req) {
        return error(StatusCode::UNSUPPORTED_MEDIA_TYPE, "invalid_arguments", "send Content-Type: application/json");
    }
    let body = match read_small_body(req.into_body(), MAX_INPUT_BODY, app.cfg.limits.body_timeout).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let input = match parse_input(&body) {
        Ok(i) => i,
        Err(e) => return fail(&e),
    };
    // Holder first: a non-holder learns nothing about the screen and touches nothing.
    if let Err(e) = app.hub.operator_touch(key, &by) {
        return fail(&e);
    }
    if let Err(e) = online(app, key) {
        return fail(&e);
    }
    let Some(adb) = &w.adb else {
        return error(StatusCode::NOT_IMPLEMENTED, "tool_invoke_failed", "this connector has no ADB backend");
    };
    let mut record = input.record();
    let outcome = run(adb, key, &input).await;
    // The screen is about to answer the input: the live view leaves its still-screen pace now.
    w.live.poke(key);
    let result = match &outcome {
        Ok(()) => "ok",
        Err(e) => e.code.as_str(),
    };
    record.insert("by".into(), json!(by.name()));
    app.hub.audit(OPERATOR_CHANNEL, None, "operator.input", key, &record, result);
    tracing::info!(device = %key, action = input.action(), outcome = result, "operator input");
    match outcome {
        Ok(()) => {
            record.remove("by");
            ok(json!({"device_id": device_id(key), "done": Value::Object(record)}))
        }
        Err(e) => fail(&e),
    }
}

async fn run(adb: &crate::device::adb::AdbBackend, key: &DeviceKey, input: &Input) -> Result<(), ProtoError> {
    let points = input.points();
    if !points.is_empty() {
        // The orientation now (not a cached one): the operator aimed at the picture the phone shows now.
        let (w, h) = adb.display_size_now(key).await?;
        for (x, y) in points {
            if x >= i64::from(w) || y >= i64::from(h) {
                return Err(invalid(format!(
                    "({x}, {y}) is outside the screen: x must be 0..{} and y 0..{} (device pixels, {w}×{h} in the \
                     current orientation)",
                    w.saturating_sub(1),
                    h.saturating_sub(1)
                )));
            }
        }
    }
    match adb.shell_ok(key, &input.command(), true, INPUT_DEADLINE).await {
        Ok(_) => Ok(()),
        // The phone's message could echo what was typed: typed text never reaches an error.
        Err(e) if matches!(input, Input::Text(_)) => {
            Err(ProtoError::new(e.code, "typing the text failed on the phone"))
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_bodies_are_closed_and_bounded() {
        assert_eq!(parse_input(br#"{"action":"tap","x":10,"y":20}"#).unwrap(), Input::Tap { x: 10, y: 20 });
        assert_eq!(
            parse_input(br#"{"action":"swipe","x1":1,"y1":2,"x2":3,"y2":4}"#).unwrap(),
            Input::Swipe { x1: 1, y1: 2, x2: 3, y2: 4, ms: 300 }
        );
        assert_eq!(parse_input(br#"{"action":"key","key":"HOME"}"#).unwrap(), Input::Key("HOME".into()));
        for bad in [
            &br#"{"action":"tap","x":-1,"y":2}"#[..],
            br#"{"action":"tap","x":1.5,"y":2}"#,
            br#"{"action":"tap","x":1}"#,
            br#"{"action":"tap","x":1,"y":2,"z":3}"#,
            br#"{"action":"long_press","x":1,"y":2,"duration_ms":10}"#,
            br#"{"action":"swipe","x1":1,"y1":2,"x2":3,"y2":4,"duration_ms":100000}"#,
            br#"{"action":"key","key":"HOME; reboot"}"#,
            br#"{"action":"text","text":""}"#,
            br#"{"action":"shell","cmd":"reboot"}"#,
            br#"[1]"#,
            b"not json",
        ] {
            let e = parse_input(bad).unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidArguments, "{}", String::from_utf8_lossy(bad));
        }
        let long = format!(r#"{{"action":"text","text":"{}"}}"#, "a".repeat(MAX_TEXT_CHARS + 1));
        assert_eq!(parse_input(long.as_bytes()).unwrap_err().code, ErrorCode::InvalidArguments);
        let e = parse_input("{\"action\":\"text\",\"text\":\"secret\\n\"}".as_bytes()).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnsupportedText);
        assert!(!e.message.contains("secret"));
        // The record of a text input carries its length, never the text.
        let t = parse_input(br#"{"action":"text","text":"hunter2 it is"}"#).unwrap();
        let rec = Value::Object(t.record()).to_string();
        assert!(!rec.contains("hunter2") && rec.contains("\"chars\":13"), "{rec}");
        assert!(t.command().starts_with("input text "));
    }
}
