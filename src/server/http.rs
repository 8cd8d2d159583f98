//! Request routing for the control, transfer and data planes, the MCP endpoint and the mounted wall. The response
//! primitives are `crate::http`, the small-body reader `body.rs`.

use std::convert::Infallible;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW};
use hyper::{Method, Request, Response, StatusCode};

use super::auth::Surface;
use super::state::App;
use super::{control, mcp, transfer, ws};
use crate::http::{error, Body};

fn method_not_allowed(allow: &'static str) -> Response<Body> {
    let mut r = error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", &format!("use {allow} on this path"));
    r.headers_mut().insert(ALLOW, HeaderValue::from_static(allow));
    r
}

/// Without a key: a request under a host name we do not know (DNS rebinding) to a surface that is private, or a
/// WebSocket upgrade or upload from another origin's page, gets 403 (see [`super::origin`]). Which surface gets
/// which rule, and why:
///
/// - the wall, `/health` and `/metrics` (every serial, the adb server's address, counts): the `Host` rule. A
///   rebound page's GET is same-origin and carries no `Origin`, so only its `Host` (the attacker's name) gives
///   it away;
/// - `/ws` and `POST /files/uploads`: the `Origin` rule. A browser sends `Origin` on both (on every WebSocket
///   upgrade and every POST), rebound or not, and agents and xAgent's backend send none — they may use any host
///   name, so the `Host` rule would lock out an agent that names the box without an `--allowed-host`;
/// - `/mcp`: the `Origin` rule whether or not there is a key (the MCP transport's guidance: a page of another
///   origin never drives phones), and without a key the `Host` rule too (`server::mcp::foreign_page`);
/// - `/files/refs/…`: neither; the one-time token in the path is the protection, and a page cannot know it;
/// - `/connector-card.json` and `/skill.md`: neither; public by protocol (the platform fetches them before it has
///   anything else), and the same for every reader — they name no phone, channel or address.
fn foreign_page<B>(app: &App, req: &Request<B>, path: &str) -> Option<Response<Body>> {
    if path == "/mcp" {
        return mcp::foreign_page(app, req);
    }
    if app.cfg.api_key.is_some() {
        return None;
    }
    let header = |name| req.headers().get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    let host = header(hyper::header::HOST).unwrap_or("");
    let allowed = &app.cfg.allowed_hosts;
    if path == "/ws" || path == "/files/uploads" {
        let origin = header(hyper::header::ORIGIN)?;
        if super::origin::origin_allowed(origin, host, allowed) {
            return None;
        }
        return Some(error(
            StatusCode::FORBIDDEN,
            "origin_not_allowed",
            &format!("this connector has no API key, so {path} refuses requests from web pages of other origins"),
        ));
    }
    let private = app.wall.owns(path) || path == "/health" || path == "/metrics";
    if private && !super::origin::host_allowed(host, allowed) {
        return Some(error(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "unknown Host: without an API key the wall, /health and /metrics answer only IP addresses, localhost and \
             the names given with --allowed-host",
        ));
    }
    None
}

/// Answers one request. `mcp` is the MCP endpoint's session table (kept by the accept loop, see `state.rs`).
pub async fn route(
    app: Arc<App>,
    mcp: Arc<mcp::Sessions>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    let get = method == Method::GET || method == Method::HEAD;
    if let Some(refused) = foreign_page(&app, &req, &path) {
        tracing::debug!(%method, %path, status = refused.status().as_u16(), "http");
        return Ok(common_headers(&path, refused));
    }
    let resp = match path.as_str() {
        "/connector-card.json" if get => control::card(&app),
        "/skill.md" if get => control::skill(),
        "/health" if get => match app.check_api_key(&req, Surface::Health) {
            Ok(()) => control::health(&app).await,
            Err(r) => *r,
        },
        "/metrics" if get => match app.check_api_key(&req, Surface::Metrics) {
            Ok(()) => control::metrics(&app),
            Err(r) => *r,
        },
        "/ws" if method == Method::GET => ws::upgrade(app.clone(), req),
        "/mcp" => mcp::handle(app.clone(), mcp, req).await,
        "/files/uploads" if method == Method::POST => transfer::upload(&app, req).await,
        "/files/uploads" => method_not_allowed("POST"),
        p if p.starts_with("/files/refs/") => match &p["/files/refs/".len()..] {
            file_ref if get => transfer::download(&app, &req, file_ref).await,
            _ => method_not_allowed("GET, HEAD"),
        },
        "/connector-card.json" | "/skill.md" | "/health" | "/metrics" => method_not_allowed("GET, HEAD"),
        "/ws" => method_not_allowed("GET"),
        p if app.wall.owns(p) => app.wall.clone().route(app.clone(), req).await,
        _ => error(StatusCode::NOT_FOUND, "not_found", &format!("no endpoint at {path}")),
    };
    tracing::debug!(%method, %path, status = resp.status().as_u16(), "http");
    Ok(common_headers(&path, resp))
}

/// Headers every answer carries: `nosniff` (a JSON error or a JPEG is never run as a script or page), and
/// `Cache-Control: no-store` on refusals and on every devices-API answer (serials, CSRF tokens and screens must not
/// stay in a shared cache), unless the handler chose a policy already.
fn common_headers(path: &str, mut resp: Response<Body>) -> Response<Body> {
    let status = resp.status();
    let h = resp.headers_mut();
    h.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    let refusal = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN | StatusCode::NOT_FOUND);
    if (refusal || path == "/api/v1" || path.starts_with("/api/v1/")) && !h.contains_key(hyper::header::CACHE_CONTROL) {
        h.insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    resp
}
