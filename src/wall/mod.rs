//! The operator's device wall (`GET /`) and the devices API (`/api/v1/…`): every phone the connector sees, live,
//! for a person in a browser and for device-farm integrations as JSON.
//!
//! Why it lives beside the protocol planes and not inside them: the wall is for the operator, not the agent. It
//! shows full serials and lets the operator release a binding or take a phone over, so it has its own access rules
//! (a login that turns the system API key into a short-lived HttpOnly session cookie, a CSRF token for every
//! state-changing action: Release, takeover, return, input, logout),
//! and its device work must never get in an agent's way (thumbnails: one capture per device in flight, reused for
//! seconds, skipped while an agent captures; device facts through observation-only shell calls).
//!
//! Files: `session.rs` (login, cookies, CSRF), `api.rs` (the route handlers), `views.rs` (the JSON views),
//! `state.rs` (`Wall` and `WallConfig`), `thumbs.rs` (thumbnail and device-facts caches), `live.rs` (the live
//! view: one capture loop per watched phone, through the thumbnail cache), `feeds.rs` (the live view's book of
//! viewers and loops), `control.rs` (takeover, return and operator input; the takeover state itself is
//! `channels::takeover`), `activity.rs` (audit-log follower, call durations, agents-first signal), `events.rs`
//! (the Server-Sent Events stream), `users.rs` (operator accounts: the users file, roles, password hashes; the
//! trusted proxies' networks), `wire.rs` (JSON bodies, SSE frames), `assets/wall.html` (the page, embedded).
//! Inside, one way: mod → api → control, events, live → views → state → activity, session, feeds → thumbs; session →
//! users (and wire.rs, which reaches none).

mod activity;
mod api;
mod control;
mod events;
mod feeds;
mod live;
mod session;
mod state;
mod thumbs;
pub mod users;
mod views;
mod wire;

use std::sync::Arc;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_SECURITY_POLICY, CONTENT_TYPE};
use hyper::{Method, Request, Response};

use crate::device::DeviceKey;
use crate::http::{full, Body};
use crate::server::{App, BoxFuture, Mount};

pub use activity::AgentCall;
pub use state::{
    device_id, Wall, WallConfig, DEFAULT_LIVE_WRITE_TIMEOUT, DEFAULT_TAKEOVER_IDLE, MAX_EVENT_STREAMS,
    MIN_THUMBNAIL_INTERVAL,
};
pub use users::{Cidr, Role};

/// The page: one self-contained HTML file (no external assets: lab networks are often offline).
pub const PAGE: &str = include_str!("../../assets/wall.html");

/// Whether `path` belongs to the wall (so `server::http` hands it over).
pub fn owns(path: &str) -> bool {
    path == "/" || path == "/api/v1" || path.starts_with("/api/v1/")
}

/// How the server reaches the wall: `run.rs` mounts it into [`App`], and the server knows it only as a
/// [`Mount`] — the arrow runs from the wall to the server, never back.
impl Mount for Wall {
    fn owns(&self, path: &str) -> bool {
        owns(path)
    }

    fn route(self: Arc<Self>, app: Arc<App>, req: Request<Incoming>) -> BoxFuture<'static, Response<Body>> {
        Box::pin(async move { route(&app, self, req).await })
    }

    fn signed_in(&self, req: &Request<Incoming>) -> bool {
        // A live session cookie, or the trusted proxy's user header from a --trusted-proxy address: both are an
        // operator the wall already believes.
        self.sessions.of_request(req).is_some() || self.sessions.proxied(req).is_some()
    }

    fn agent_call(&self, channel_id: &str, device: &DeviceKey, tool_id: &str) -> Box<dyn Send> {
        Box::new(Wall::agent_call(self, channel_id, device, tool_id))
    }

    fn read_call(&self, channel_id: &str, device: &DeviceKey, tool_id: &str, arguments: String, outcome: &str) {
        Wall::read_call(self, channel_id, device, tool_id, arguments, outcome)
    }
}

/// Routes `/` and `/api/v1/…`.
pub async fn route(app: &Arc<App>, w: Arc<Wall>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    let method = req.method().clone();
    let get = method == Method::GET || method == Method::HEAD;
    if path == "/" {
        return if get { page() } else { api::method_not_allowed("GET, HEAD") };
    }
    api::route(app, w, req, &path, &method).await
}

fn page() -> Response<Body> {
    let mut r = Response::new(full(PAGE));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // Everything is inline and same-origin; nothing may be framed (clickjacking of the Release button).
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_str(csp()).expect("the CSP is ASCII"));
    h.insert("x-frame-options", HeaderValue::from_static("DENY"));
    h.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    r
}

/// The page's Content-Security-Policy: the one inline script is allowed by its SHA-256 (computed once from the
/// embedded page, so an edit of the page can never leave a stale hash), never by `'unsafe-inline'`: markup that
/// slipped into the page (a phone's model name, say) could not run.
fn csp() -> &'static str {
    static CSP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CSP.get_or_init(|| {
        format!(
            "default-src 'none'; script-src '{}'; style-src 'unsafe-inline'; img-src 'self' blob:; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            script_hash(PAGE)
        )
    })
}

/// `sha256-<base64>` of the text between the page's `<script>` and `</script>`.
fn script_hash(page: &str) -> String {
    use sha2::{Digest, Sha256};
    let start = page.find("<script>").expect("the page has an inline script") + "<script>".len();
    let len = page[start..].find("</script>").expect("the script ends");
    let digest = Sha256::digest(&page.as_bytes()[start..start + len]);
    format!("sha256-{}", crate::base64::encode(&digest))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_script_is_allowed_by_its_hash_not_by_unsafe_inline() {
        assert!(csp().contains("script-src 'sha256-") && !csp().contains("script-src 'unsafe-inline'"));
    }
}
