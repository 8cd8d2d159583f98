//! The devices API (`/api/v1/…`): the wall's data as JSON with stable field names, for the page and for
//! device-farm integrations. Errors are `{"error": {"code", "message"}}` with the protocol's error codes.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CACHE_CONTROL, CONTENT_TYPE, ETAG, SET_COOKIE};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use super::session::{self, Principal, Who};
use super::state::{device_id, no_device, Wall};
use super::users::Role;
use super::views::{all_devices, device_json, find, snapshot, takeover_json};
use super::wire::is_json;
use crate::device::{DeviceKey, DeviceState};
use crate::http::{error, full, json_response, Body};
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::server::body::read_small_body;
use crate::server::App;

/// Largest login body.
const MAX_LOGIN_BODY: usize = 4096;
/// How long a device list request waits for device facts that are being read (the first look at a device).
const FACTS_WAIT: Duration = Duration::from_millis(1500);
/// Recent actions and errors in the detail view.
const DETAIL_ACTIONS: usize = 50;
const DETAIL_ERRORS: usize = 20;

pub fn method_not_allowed(allow: &'static str) -> Response<Body> {
    let mut r = error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", &format!("use {allow} on this path"));
    r.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    r
}

fn proto_error(status: StatusCode, e: &ProtoError) -> Response<Body> {
    error(status, e.code.as_str(), &e.message)
}

pub async fn route(
    app: &Arc<App>,
    w: Arc<Wall>,
    req: Request<Incoming>,
    path: &str,
    method: &Method,
) -> Response<Body> {
    let get = method == Method::GET || method == Method::HEAD;
    let rest = path.strip_prefix("/api/v1").unwrap_or("");
    if rest == "/session" {
        return match *method {
            Method::GET => session_status(app, &w, &req),
            Method::POST => login(app, &w, req).await,
            Method::DELETE => logout(app, &w, &req),
            _ => method_not_allowed("GET, POST, DELETE"),
        };
    }
    let known = rest == "/devices" || rest == "/events" || rest.starts_with("/devices/");
    if !known {
        return error(StatusCode::NOT_FOUND, "not_found", &format!("no endpoint at {path}"));
    }
    let principal = match session::authorize(app, &w.sessions, &req) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    if rest == "/devices" {
        return if get { devices(app, &w).await } else { method_not_allowed("GET, HEAD") };
    }
    if rest == "/events" {
        let session = match &principal {
            Principal::Session { id, .. } => Some(id.clone()),
            _ => None,
        };
        return if get { super::events::stream(app.clone(), w, session).await } else { method_not_allowed("GET") };
    }
    let tail = &rest["/devices/".len()..];
    let (id, action) = tail.split_once('/').unwrap_or((tail, ""));
    let Some(key) = find(app, &w, id) else { return no_device(id) };
    match action {
        "" if get => operator_view(app, &w, &key, &principal, detail(app, &w, &key).await).await,
        "" => method_not_allowed("GET, HEAD"),
        "screen.jpg" if get => screen(app, &w, &key).await,
        "screen.jpg" => method_not_allowed("GET, HEAD"),
        "release" if *method == Method::POST => {
            match session::check_csrf(&principal, &req)
                .and_then(|()| session::require(&principal, Role::Admin, "release a phone from its agent"))
            {
                Ok(()) => release(app, &key, &principal.who().name).await,
                Err(r) => *r,
            }
        }
        "release" => method_not_allowed("POST"),
        // ---- live view and takeover (live.rs, control.rs) ----
        "live.mjpeg" if get => {
            let deadline = req.extensions().get::<crate::server::stall::WriteDeadline>().cloned();
            live(app, &w, &key, &principal, deadline).await
        }
        "live.mjpeg" => method_not_allowed("GET, HEAD"),
        "takeover" | "return" | "input" if *method == Method::POST => {
            if let Err(r) = session::check_csrf(&principal, &req)
                .and_then(|()| session::require(&principal, Role::Operator, "take over, control and return phones"))
            {
                return *r;
            }
            match action {
                "takeover" => super::control::takeover(app, &w, &key, &principal).await,
                "return" => super::control::give_back(app, &key, &principal, req).await,
                _ => super::control::input(app, &w, &key, &principal, req).await,
            }
        }
        "takeover" | "return" | "input" => method_not_allowed("POST"),
        _ => error(StatusCode::NOT_FOUND, "not_found", &format!("no endpoint at {path}")),
    }
}

// ---- session -------------------------------------------------------------------------------------------------

fn with_cookie(mut r: Response<Body>, cookie: String) -> Response<Body> {
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        r.headers_mut().insert(SET_COOKIE, v);
    }
    r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `GET /api/v1/session`: whether this browser is logged in (and its CSRF token). An open wall (no key) hands
/// out a session at once, so Release works with a CSRF token there too.
fn session_status(app: &App, w: &Wall, req: &Request<Incoming>) -> Response<Body> {
    let key_required = app.cfg.api_key.is_some();
    let who_json = |who: &Who| json!({"user": who.name, "role": who.role.as_str()});
    let status = |csrf: Option<&str>, who: &Who, key_required: bool| {
        let mut v = json!({"authenticated": true, "key_required": key_required, "csrf_token": csrf});
        v.as_object_mut().expect("an object").extend(who_json(who).as_object().expect("an object").clone());
        v
    };
    match session::authorize(app, &w.sessions, req) {
        Ok(Principal::Session { csrf, who, .. }) => {
            no_store(json_response(StatusCode::OK, status(Some(&csrf), &who, key_required).to_string()))
        }
        Ok(Principal::Bearer) => {
            no_store(json_response(StatusCode::OK, status(None, &Who::api_key(), true).to_string()))
        }
        // An open wall, or a trusted proxy's operator: a session at once (its CSRF token makes actions possible).
        Ok(p @ (Principal::Open | Principal::Proxy(_))) => {
            let who = p.who();
            let (id, csrf) = w.sessions.create(crate::server::auth::peer_ip(req), who.clone(), false);
            let body = status(Some(&csrf), &who, key_required);
            with_cookie(json_response(StatusCode::OK, body.to_string()), w.sessions.cookie(&id))
        }
        Err(_) => no_store(json_response(
            StatusCode::OK,
            json!({"authenticated": false, "key_required": true, "csrf_token": null}).to_string(),
        )),
    }
}

fn no_store(mut r: Response<Body>) -> Response<Body> {
    r.headers_mut().insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// `POST /api/v1/session` with `{"user": "…", "password": "…"}` (an operator account, `users.rs`) or
/// `{"api_key": "…"}` (the system key: the admin `api-key`). The secret travels once, in the body; a wrong one counts
/// against the source's failure limit like a wrong key, and no answer or log line contains it.
async fn login(app: &App, w: &Wall, req: Request<Incoming>) -> Response<Body> {
    use crate::server::auth::Surface;
    if !is_json(&req) {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "invalid_arguments",
            "send the login as Content-Type: application/json {\"user\": \"…\", \"password\": \"…\"} or \
             {\"api_key\": \"…\"}",
        );
    }
    let ip = crate::server::auth::peer_ip(&req);
    let body = match read_small_body(req.into_body(), MAX_LOGIN_BODY, app.cfg.limits.body_timeout).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let shape = "the login body must be a JSON object with string fields user and password, or api_key";
    let Ok(Value::Object(v)) = serde_json::from_slice::<Value>(&body) else {
        return error(StatusCode::BAD_REQUEST, "invalid_arguments", "the login body is not a JSON object");
    };
    let text = |k: &str| match v.get(k) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(()),
    };
    let (Ok(user), Ok(password), Ok(key)) = (text("user"), text("password"), text("api_key")) else {
        return error(StatusCode::BAD_REQUEST, "invalid_arguments", shape);
    };
    let account = user.is_some();
    let who = match (user, password, key) {
        (Some(user), Some(password), None) => {
            let user = user.trim();
            if let Some(retry) = ip.and_then(|ip| app.auth.blocked(ip, std::time::Instant::now())) {
                return app.auth.refuse_blocked(retry, Surface::Login);
            }
            // Hashing takes a while on purpose: off the async workers.
            let (accounts, name, pw) = (w.sessions.accounts(), user.to_owned(), password.to_owned());
            let role =
                tokio::task::spawn_blocking(move || super::users::verify(&accounts, &name, &pw)).await.unwrap_or(None);
            match role {
                Some(role) => Who { name: user.to_owned(), role },
                None => {
                    app.auth.failed(ip, Surface::Login, std::time::Instant::now());
                    tracing::warn!(ip = %ip.map(|i| i.to_string()).unwrap_or_default(), "device wall: wrong user name or password");
                    return error(StatusCode::UNAUTHORIZED, "unauthorized", "wrong user name or password");
                }
            }
        }
        (None, None, Some(presented)) => {
            if let Some(key) = app.cfg.api_key.as_deref() {
                if let Err(r) = app.auth.verify(ip, key, presented.trim(), Surface::Login) {
                    return *r;
                }
            }
            Who::api_key()
        }
        _ => return error(StatusCode::BAD_REQUEST, "invalid_arguments", shape),
    };
    let (id, csrf) = w.sessions.create(ip, who.clone(), account);
    tracing::info!(user = %who.name, role = who.role.as_str(), "device wall: operator logged in");
    let body = json!({"authenticated": true, "key_required": app.cfg.api_key.is_some(), "csrf_token": csrf,
                      "expires_in_s": w.sessions.ttl().as_secs(), "user": who.name, "role": who.role.as_str()});
    with_cookie(json_response(StatusCode::OK, body.to_string()), w.sessions.cookie(&id))
}

/// `DELETE /api/v1/session` (CSRF-checked): ends the session and clears the cookie.
fn logout(app: &App, w: &Wall, req: &Request<Incoming>) -> Response<Body> {
    let principal = match session::authorize(app, &w.sessions, req) {
        Ok(p) => p,
        Err(r) => return *r,
    };
    if let Err(r) = session::check_csrf(&principal, req) {
        return *r;
    }
    if let Principal::Session { id, .. } = &principal {
        w.sessions.remove(id);
        // A takeover ends with the operator's session.
        app.hub.operator_logout(id);
    }
    with_cookie(json_response(StatusCode::OK, json!({"authenticated": false}).to_string()), w.sessions.cleared_cookie())
}

async fn devices(app: &App, w: &Wall) -> Response<Body> {
    no_store(json_response(StatusCode::OK, snapshot(app, w, FACTS_WAIT).await.to_string()))
}

async fn detail(app: &App, w: &Wall, key: &DeviceKey) -> Response<Body> {
    w.activity.refresh(app.hub.store());
    let Some(d) = all_devices(app, w).into_iter().find(|d| &d.key == key) else {
        return no_device(&device_id(key));
    };
    if let (Some(adb), DeviceState::Online) = (&w.adb, d.state) {
        w.facts.refresh(adb, vec![key.clone()], FACTS_WAIT).await;
    }
    let mut v = device_json(app, w, &d, &app.hub.holders());
    let actions = w.activity.recent(key, DETAIL_ACTIONS);
    let errors: Vec<Value> = actions.iter().filter(|a| a["outcome"] != "ok").take(DETAIL_ERRORS).cloned().collect();
    v["recent_actions"] = Value::Array(actions);
    v["recent_errors"] = Value::Array(errors);
    no_store(json_response(StatusCode::OK, v.to_string()))
}

/// The capture endpoints' answer for a phone that is not online (`device_unauthorized` / `device_offline`).
fn not_online(app: &App, key: &DeviceKey) -> Option<Response<Body>> {
    match app.hub.backend().info(key).map(|d| d.state) {
        Some(DeviceState::Online) => None,
        Some(DeviceState::Unauthorized) => {
            Some(error(StatusCode::CONFLICT, "device_unauthorized", "the device has not authorised this computer"))
        }
        _ => Some(error(StatusCode::CONFLICT, "device_offline", "the device is not online")),
    }
}
async fn screen(app: &App, w: &Wall, key: &DeviceKey) -> Response<Body> {
    let Some(adb) = &w.adb else {
        return error(StatusCode::NOT_IMPLEMENTED, "tool_invoke_failed", "this connector has no ADB backend");
    };
    if let Some(refused) = not_online(app, key) {
        return refused;
    }
    let activity = &w.activity;
    match w.thumbs.get(adb, key, || activity.capturing(key)).await {
        Ok((t, stale)) => {
            let mut r = Response::new(full(t.jpeg.clone()));
            let h = r.headers_mut();
            h.insert(CONTENT_TYPE, HeaderValue::from_static("image/jpeg"));
            h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
            if let Ok(v) = HeaderValue::from_str(&format!("\"{}-{}\"", device_id(key), t.captured_ms)) {
                h.insert(ETAG, v);
            }
            h.insert("x-captured-at-ms", HeaderValue::from(t.captured_ms));
            h.insert("x-image-size", HeaderValue::from_str(&format!("{}x{}", t.width, t.height)).expect("ascii"));
            if stale.is_some() {
                h.insert("x-thumbnail-stale", HeaderValue::from_static("agent-capturing"));
            }
            r
        }
        Err(e) => {
            let status = match e.code {
                ErrorCode::DeviceBusy => StatusCode::SERVICE_UNAVAILABLE,
                ErrorCode::DeviceTimeout => StatusCode::GATEWAY_TIMEOUT,
                ErrorCode::DeviceOffline | ErrorCode::DeviceUnauthorized => StatusCode::CONFLICT,
                _ => StatusCode::BAD_GATEWAY,
            };
            let mut r = proto_error(status, &e);
            if status == StatusCode::SERVICE_UNAVAILABLE {
                r.headers_mut().insert(hyper::header::RETRY_AFTER, HeaderValue::from_static("2"));
            }
            r
        }
    }
}

/// The detail view's operator fields, added to a successful detail answer: whether this caller holds the phone
/// (`takeover.mine`) and the phone's natural screen size (`display`), which the page needs to map a click on the
/// (rotated, downscaled) live picture to device pixels.
async fn operator_view(
    app: &App,
    w: &Wall,
    key: &DeviceKey,
    principal: &Principal,
    r: Response<Body>,
) -> Response<Body> {
    if r.status() != StatusCode::OK {
        return r;
    }
    let Ok(bytes) = http_body_util::BodyExt::collect(r.into_body()).await.map(|b| b.to_bytes()) else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "detail view unavailable");
    };
    let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "detail view unavailable");
    };
    let me = super::control::operator(principal);
    v["takeover"] = app.hub.takeover_of(key).map_or(Value::Null, |t| takeover_json(&t, me.as_ref()));
    let online = app.hub.backend().info(key).is_some_and(|d| d.state == DeviceState::Online);
    if let (Some(adb), true) = (&w.adb, online) {
        if let Some((width, height)) = w.facts.display(adb, key, FACTS_WAIT).await {
            v["display"] = json!({"width": width, "height": height});
        }
    }
    no_store(json_response(StatusCode::OK, v.to_string()))
}

// ---- live view ---------------------------------------------------------------------------------------------

/// `GET /api/v1/devices/{id}/live.mjpeg` (see `live.rs`).
async fn live(
    app: &Arc<App>,
    w: &Arc<Wall>,
    key: &DeviceKey,
    principal: &Principal,
    deadline: Option<crate::server::stall::WriteDeadline>,
) -> Response<Body> {
    let Some(adb) = w.adb.clone() else {
        return error(StatusCode::NOT_IMPLEMENTED, "tool_invoke_failed", "this connector has no ADB backend");
    };
    if let Some(refused) = not_online(app, key) {
        return refused;
    }
    let session = match principal {
        Principal::Session { id, .. } => Some(id.clone()),
        _ => None,
    };
    super::live::stream(app.clone(), w.clone(), adb, key.clone(), session, deadline).await
}

/// `POST /api/v1/devices/{id}/release`: ends the binding of whichever channel holds the device.
async fn release(app: &App, key: &DeviceKey, by: &str) -> Response<Body> {
    let Some(h) = app.hub.holders().into_iter().find(|h| &h.device == key) else {
        return error(StatusCode::CONFLICT, "connection_not_found", "no channel holds this device");
    };
    match app.hub.operator_release(&h.channel_id, by).await {
        Ok(_) => {
            let body = json!({"released": true, "device_id": device_id(key), "channel_id": h.channel_id});
            no_store(json_response(StatusCode::OK, body.to_string()))
        }
        Err(e) => proto_error(StatusCode::INTERNAL_SERVER_ERROR, &e),
    }
}
