//! `/mcp`: the Model Context Protocol endpoint (Streamable HTTP transport, handshake revisions 2025-03-26 to
//! 2025-11-25), so any MCP client can use the same phones, under the same leases, audit, policy and takeover.
//!
//! Why by hand and not the `rmcp` SDK: its Streamable HTTP server is a tower service with its own session manager
//! (sessions in its own unbounded map, its own SSE streams) and brings tower, axum-style routing, SSE and uuid
//! crates; what the endpoint needs is a JSON-RPC dispatch of four methods on the hyper server we have, behind our
//! key check, per-source failure limit and caps. Answers are single JSON responses (`application/json`, which the
//! transport allows for every request), except a `tools/call` carrying a progress token, answered as an event stream
//! of progress then the response ([`stream`]); `GET /mcp` (a server-initiated stream) is 405, as the transport
//! allows. A running call ends with `notifications/cancelled` naming it, or with its client's connection.
//!
//! One MCP session is one connector channel, opened at `initialize` on an in-process data plane
//! ([`super::ws::local`]): every `tools/call` is a `tool.invoke` packet through the same dispatcher a WebSocket frame
//! reaches, so validation, idempotency (`_meta.tool_call_id`), deadlines, settle, effect, audit, policy, permits and
//! the operator's takeover apply unchanged. The phone is bound on the first call (`auth.start` without input: any
//! free phone) or by `select_device` (`auth.start`'s own fields and matching), and released when the session ends
//! (`DELETE`, [`IDLE`] without a request, or shutdown). The tool list is the card's, each input schema the card's
//! without `connector_channel_id` (the session's channel fills it in).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Map, Value};

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use tokio_util::sync::CancellationToken;

use super::auth::Surface;
use super::body::read_small_body;
use super::mcp_manual as manual;
use super::mcp_tools::{self as tools, tool_error, FLOW, LIST_DEVICES, RELEASE_DEVICE, SELECT_DEVICE};
use super::stall::WriteDeadline;
use super::state::App;
use super::ws::local::{Hooks, Local};
use crate::http::{error, json_response, Body};
use crate::protocol::packet::obj;
use crate::protocol::{self as proto, Packet};

/// The handshake revisions answered, newest first (the first is offered to a client asking for another).
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];
/// A session with no request for this long ends: its phone goes back to the pool.
pub const IDLE: Duration = Duration::from_secs(30 * 60);
/// Longest between two looks at an idle session (it may have let its phone go meanwhile). A session holding no
/// phone ends after `--mcp-unbound-idle` without a request (issue 48: `initialize` alone creates one; a
/// crash-looping editor leaves dozens behind).
const RECHECK: Duration = Duration::from_secs(2 * 60);
/// Largest image put into a result as MCP image content; a larger file is a resource link to its one-time URL.
pub const MAX_INLINE_IMAGE: u64 = 1 << 20;
const SESSION_HEADER: &str = "mcp-session-id";
/// A `tools/call` with a progress token that runs longer than this hears `notifications/progress` at least this
/// often (elapsed time), besides the steps the tool reports.
pub const HEARTBEAT: Duration = Duration::from_secs(1);
/// Longest `clientInfo.name` / `version` shown on the wall (client-supplied).
const MAX_CLIENT_NAME: usize = 64;
/// Events queued for one progress stream: a client that stops reading holds at most these, and the write deadline
/// (`--ws-write-timeout`, armed on the socket: `server::stall`) ends its connection, which cancels the call.
const STREAM_QUEUE: usize = 4;
const VERSION_HEADER: &str = "mcp-protocol-version";

/// The open MCP sessions, and the connector instance they share (one instance for every MCP session, so ended
/// sessions leave no instance behind waiting for its lease). One per server, kept by the accept loop
/// (`server::serve`) and handed to [`handle`]: a session holds an in-process data plane, which holds the `App`, so
/// the table sits above the state, not in it.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<McpSession>>>,
    instance: Mutex<Option<String>>,
    /// One `initialize` at a time decides whether there is room (`--max-mcp-sessions`) and whom to end for it.
    admit: tokio::sync::Mutex<()>,
}

struct McpSession {
    local: Local,
    channel: String,
    /// The wall's name for this session's holder: `MCP: <clientInfo.name> <version>`, cleaned and bounded.
    label: String,
    /// Running `tools/call` requests by their JSON-RPC id (its JSON text: `"1"` is not `1`), for
    /// `notifications/cancelled`.
    running: Mutex<HashMap<String, (u64, CancellationToken)>>,
    last: Mutex<Instant>,
    /// Two first calls at once bind one phone, not two.
    bind: tokio::sync::Mutex<()>,
    ended: CancellationToken,
}

impl Sessions {
    fn get(&self, id: &str) -> Option<Arc<McpSession>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned()
    }

    /// Sessions open now.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The transport's security rules (MCP "Security Warning": validate `Origin`, against DNS rebinding): a request
/// carrying an `Origin` (a browser page) is refused unless it is the connector's own origin, key or no key — a
/// page of another origin has no business driving phones. Without a key the `Host` rule of the wall applies too
/// (a rebound page is same-origin under the attacker's name, which its `Host` gives away).
pub fn foreign_page<B>(app: &App, req: &Request<B>) -> Option<Response<Body>> {
    let header = |name| req.headers().get(name).and_then(|v: &HeaderValue| v.to_str().ok());
    let host = header(hyper::header::HOST).unwrap_or("");
    let allowed = &app.cfg.allowed_hosts;
    if let Some(origin) = header(hyper::header::ORIGIN) {
        if !super::origin::origin_allowed(origin, host, allowed) {
            return Some(error(
                StatusCode::FORBIDDEN,
                "origin_not_allowed",
                "/mcp refuses requests from web pages of other origins",
            ));
        }
    }
    if app.cfg.api_key.is_none() && !super::origin::host_allowed(host, allowed) {
        return Some(error(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "unknown Host: without an API key /mcp answers only IP addresses, localhost and the names given with \
             --allowed-host",
        ));
    }
    None
}

pub async fn handle(app: Arc<App>, mcp: Arc<Sessions>, req: Request<Incoming>) -> Response<Body> {
    if let Err(r) = app.check_api_key(&req, Surface::Mcp) {
        return *r;
    }
    if let Some(v) = req.headers().get(VERSION_HEADER) {
        let v = v.to_str().unwrap_or("");
        if !PROTOCOL_VERSIONS.contains(&v) {
            return error(
                StatusCode::BAD_REQUEST,
                "protocol_version_unsupported",
                &format!("MCP-Protocol-Version must be one of {}", PROTOCOL_VERSIONS.join(", ")),
            );
        }
    }
    let session_id = req.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    match *req.method() {
        Method::POST => post(app, mcp, req, session_id).await,
        Method::DELETE => match session_id.and_then(|id| mcp.get(&id).map(|s| (id, s))) {
            Some((id, s)) => {
                end(&app, &mcp, &id, &s, End::Deleted).await;
                let mut r = Response::new(crate::http::full(""));
                *r.status_mut() = StatusCode::NO_CONTENT;
                r
            }
            None => error(StatusCode::NOT_FOUND, "session_not_found", "no such MCP session (it ended or expired)"),
        },
        _ => {
            // No server-initiated stream: every answer comes on the POST that asked (the transport allows 405).
            let mut r = error(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "use POST or DELETE on /mcp");
            r.headers_mut().insert(ALLOW, HeaderValue::from_static("POST, DELETE"));
            r
        }
    }
}

fn rpc_result(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

fn rpc_error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

fn answer(status: StatusCode, v: &Value) -> Response<Body> {
    json_response(status, v.to_string())
}

async fn post(app: Arc<App>, mcp: Arc<Sessions>, req: Request<Incoming>, session_id: Option<String>) -> Response<Body> {
    let host = req.headers().get(hyper::header::HOST).and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
    let write_deadline = req.extensions().get::<WriteDeadline>().cloned();
    let (max, deadline) = (app.cfg.max_message_bytes, app.cfg.limits.body_timeout);
    let body = match read_small_body(req.into_body(), max, deadline).await {
        Ok(b) => b,
        Err(r) => return *r,
    };
    let msg: Map<String, Value> = match serde_json::from_slice(&body) {
        Ok(Value::Object(m)) => m,
        Ok(_) => {
            let e = rpc_error(&Value::Null, -32600, "one JSON-RPC message (an object) per POST");
            return answer(StatusCode::BAD_REQUEST, &e);
        }
        Err(_) => return answer(StatusCode::BAD_REQUEST, &rpc_error(&Value::Null, -32700, "not valid JSON")),
    };
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("").to_owned();
    let Some(id) = msg.get("id").cloned().filter(|_| !method.is_empty()) else {
        // A notification (`notifications/initialized`, `notifications/cancelled`) or a response: nothing to answer.
        if let Some(s) = session_id.as_deref().and_then(|id| mcp.get(id)) {
            *s.last.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
            if method == "notifications/cancelled" {
                cancelled(&s, msg.get("params"));
            }
        }
        let mut r = Response::new(crate::http::full(""));
        *r.status_mut() = StatusCode::ACCEPTED;
        return r;
    };
    let params = msg.get("params").and_then(Value::as_object).cloned().unwrap_or_default();
    if method == "initialize" {
        return initialize(&app, &mcp, &id, &params).await;
    }
    let progress_token = params.get("_meta").and_then(|m| m.get("progressToken")).filter(|t| is_token(t)).cloned();
    let Some(sid) = session_id else {
        let e = rpc_error(&id, -32600, "Mcp-Session-Id is required after initialize");
        return answer(StatusCode::BAD_REQUEST, &e);
    };
    let Some(session) = mcp.get(&sid) else {
        // 404 tells the client to start a new session (the transport's rule).
        let e = rpc_error(&id, -32001, "no such MCP session (it ended or expired); initialize again");
        return answer(StatusCode::NOT_FOUND, &e);
    };
    *session.last.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
    let reply = match method.as_str() {
        "ping" => rpc_result(&id, json!({})),
        "tools/list" => rpc_result(&id, json!({"tools": tools::tool_list(&app)})),
        "resources/list" => rpc_result(&id, manual::resources_list()),
        "resources/templates/list" => rpc_result(&id, json!({"resourceTemplates": []})),
        "resources/read" => match manual::resources_read(&params) {
            Ok(r) => rpc_result(&id, r),
            Err(m) => rpc_error(&id, -32602, &m),
        },
        "prompts/list" => rpc_result(&id, manual::prompts_list()),
        "prompts/get" => match manual::prompts_get(&params) {
            Ok(r) => rpc_result(&id, r),
            Err(m) => rpc_error(&id, -32602, &m),
        },
        "tools/call" => {
            let running = Running::new(&session, &id);
            return stream(app, session, id, params, host, progress_token, running, write_deadline);
        }
        _ => rpc_error(
            &id,
            -32601,
            "method not found: this server offers tools (tools/list, tools/call), resources (resources/list, \
                                       resources/read), prompts (prompts/list, prompts/get) and ping",
        ),
    };
    answer(StatusCode::OK, &reply)
}

async fn initialize(app: &Arc<App>, mcp: &Arc<Sessions>, id: &Value, params: &Map<String, Value>) -> Response<Body> {
    if *app.shutdown.borrow() {
        return answer(StatusCode::SERVICE_UNAVAILABLE, &rpc_error(id, -32603, "the connector is shutting down"));
    }
    let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or("");
    let version = PROTOCOL_VERSIONS.iter().find(|v| **v == asked).unwrap_or(&PROTOCOL_VERSIONS[0]);
    // MCP sessions have their own budget (`--max-mcp-sessions`), apart from the data plane's `--max-sessions`
    // (issue 48: 64 `initialize` requests made `/ws` answer 503 for everyone). When it is spent, the least recently
    // used session with no call running makes room.
    let _admit = mcp.admit.lock().await;
    if mcp.len() >= app.cfg.limits.max_mcp_sessions {
        let lru = {
            let map = mcp.map.lock().unwrap_or_else(|e| e.into_inner());
            map.iter()
                .filter(|(_, s)| s.running.lock().unwrap_or_else(|e| e.into_inner()).is_empty())
                // Sessions holding no phone first, then the least recently used.
                .min_by_key(|(_, s)| {
                    (app.hub.binding(&s.channel).is_some(), *s.last.lock().unwrap_or_else(|e| e.into_inner()))
                })
                .map(|(sid, s)| (sid.clone(), s.clone()))
        };
        let Some((sid, s)) = lru else {
            let m = format!(
                "this connector already has {} MCP sessions open, each running a call (--max-mcp-sessions); end one \
                 and retry",
                app.cfg.limits.max_mcp_sessions
            );
            return answer(StatusCode::SERVICE_UNAVAILABLE, &rpc_error(id, -32603, &m));
        };
        end(app, mcp, &sid, &s, End::Evicted).await;
    }
    let local = Local::new(app.clone());
    let instance = mcp.instance.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let mut hello = obj([
        ("connector_card_id", json!(proto::CONNECTOR_CARD_ID)),
        ("protocol_version", json!(proto::PROTOCOL_VERSION)),
        ("supported_profiles", json!([proto::DEVICE_PROFILE])),
    ]);
    if let Some(cid) = instance {
        hello.insert("connector_id".into(), json!(cid));
    }
    let ack = local.request("connector.hello", None, hello).await;
    let opened = match (&ack.error, ack.payload().get("connector_id").and_then(Value::as_str)) {
        (None, Some(cid)) => {
            *mcp.instance.lock().unwrap_or_else(|e| e.into_inner()) = Some(cid.to_owned());
            local.request("channel.open", None, Map::new()).await
        }
        _ => ack,
    };
    let Some(channel) = opened.connector_channel_id.clone().filter(|_| opened.error.is_none()) else {
        local.close().await;
        let m = opened.error.map_or_else(|| "could not open a channel".to_owned(), |e| e.message);
        return answer(StatusCode::SERVICE_UNAVAILABLE, &rpc_error(id, -32603, &m));
    };
    let sid = proto::ids::random_hex(16);
    let label = client_label(params.get("clientInfo"));
    app.hub.set_channel_client(&channel, &label);
    let session = Arc::new(McpSession {
        local,
        channel: channel.clone(),
        label,
        running: Mutex::default(),
        last: Mutex::new(Instant::now()),
        bind: tokio::sync::Mutex::new(()),
        ended: CancellationToken::new(),
    });
    mcp.map.lock().unwrap_or_else(|e| e.into_inner()).insert(sid.clone(), session.clone());
    tracing::info!(%channel, client = %session.label, "MCP session started");
    tokio::spawn(expire(app.clone(), mcp.clone(), sid.clone(), session));
    let result = json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": false},
            "resources": {"listChanged": false},
            "prompts": {"listChanged": false},
        },
        "serverInfo": {"name": "xagent-adb-connector", "title": "xAgent ADB Connector", "version": env!("CARGO_PKG_VERSION")},
        "instructions": manual::instructions(),
    });
    let mut r = answer(StatusCode::OK, &rpc_result(id, result));
    r.headers_mut().insert(SESSION_HEADER, HeaderValue::from_str(&sid).expect("hex is a valid header"));
    r
}

/// Why an MCP session ends.
#[derive(Clone, Copy)]
enum End {
    /// The client's `DELETE /mcp`.
    Deleted,
    /// [`IDLE`] without a request while holding a phone.
    Idle,
    /// The unbound idle (`--mcp-unbound-idle`) holding no phone.
    IdleUnbound,
    /// The least recently used idle session, ended for a new one past `--max-mcp-sessions`.
    Evicted,
    /// The connector shutting down.
    Shutdown,
}

impl End {
    /// The `lease.end` reason of the session's binding (and what its cut calls' answers say).
    fn reason(self) -> &'static str {
        match self {
            End::Deleted => "mcp_session_end",
            End::Idle | End::IdleUnbound => "mcp_session_idle",
            End::Evicted => "mcp_session_evicted",
            End::Shutdown => "shutdown",
        }
    }

    /// The log's words.
    fn why(self) -> &'static str {
        match self {
            End::Deleted => "ended by the client",
            End::Idle => "idle",
            End::IdleUnbound => "idle, holding no phone",
            End::Evicted => "least recently used, ended to make room for a new session (--max-mcp-sessions)",
            End::Shutdown => "connector shutting down",
        }
    }
}

/// Ends a session once: the phone is given back (the binding ended as `auth.logout` ends it — its calls cut first —
/// under the end's own reason, `lease.end` naming it), the channel unregistered, the in-process socket closed.
async fn end(app: &Arc<App>, mcp: &Sessions, sid: &str, s: &Arc<McpSession>, how: End) {
    if s.ended.is_cancelled() {
        return;
    }
    s.ended.cancel();
    mcp.map.lock().unwrap_or_else(|e| e.into_inner()).remove(sid);
    if app.hub.binding(&s.channel).is_some() {
        // Straight to the hub, not an `auth.logout` packet: the reason is the session's end, not the agent's logout.
        // (The channel's observations go with `channel.close` below.)
        if let Err(e) = app.hub.logout_because(&s.channel, how.reason()).await {
            tracing::warn!(channel = %s.channel, code = e.code.as_str(), "the MCP session's binding did not end cleanly");
        }
    }
    let _ = s.local.request("channel.close", Some(&s.channel), Map::new()).await;
    app.hub.cleanup_channel(&s.channel);
    s.local.close().await;
    tracing::info!(channel = %s.channel, why = how.why(), "MCP session ended");
}

/// Ends the session after [`IDLE`] without a request, or at shutdown (an MCP session does not outlive the process:
/// its phone must not stay held by a channel nobody can reach again).
async fn expire(app: Arc<App>, mcp: Arc<Sessions>, sid: String, s: Arc<McpSession>) {
    let _guard = app.tasks.enter();
    let mut shutdown = app.shutdown.clone();
    loop {
        let idle = s.last.lock().unwrap_or_else(|e| e.into_inner()).elapsed();
        // A session holding no phone (and running nothing) ends sooner: it costs a place and holds nothing.
        let holds =
            app.hub.binding(&s.channel).is_some() || !s.running.lock().unwrap_or_else(|e| e.into_inner()).is_empty();
        let unbound = app.cfg.limits.mcp_unbound_idle;
        let limit = if holds { IDLE } else { unbound };
        if idle >= limit {
            return end(&app, &mcp, &sid, &s, if holds { End::Idle } else { End::IdleUnbound }).await;
        }
        tokio::select! {
            _ = s.ended.cancelled() => return,
            _ = shutdown.changed() => return end(&app, &mcp, &sid, &s, End::Shutdown).await,
            // Looked at again at least every RECHECK (or the unbound idle, if shorter): the session may have let
            // its phone go meanwhile.
            _ = tokio::time::sleep((limit - idle).min(RECHECK.min(unbound))) => {}
        }
    }
}

fn packet_error(p: &Packet) -> Option<Value> {
    p.error.as_ref().map(|e| tool_error(&e.code, &e.message, e.details.as_ref()))
}

/// Binds a phone with `auth.start` (`input` as given); `Err` is the tool error to answer.
async fn bind(s: &McpSession, input: Map<String, Value>) -> Result<Map<String, Value>, Value> {
    let payload = obj([("flow_id", json!(FLOW)), ("input", Value::Object(input))]);
    let ack = s.local.request("auth.start", Some(&s.channel), payload).await;
    if let Some(e) = packet_error(&ack) {
        return Err(e);
    }
    let p = ack.payload();
    match p.get("status").and_then(Value::as_str) {
        Some("authenticated") => Ok(p),
        status => {
            // `pending`: the phone waits for its USB debugging prompt; the next call binds it (or another).
            let message = p.get("message").and_then(Value::as_str).unwrap_or("");
            let status = status.unwrap_or("failed");
            // Only `pending` gets here (a failed `auth.start` has an error): the phone waits for its RSA prompt.
            let code = crate::protocol::errors::ErrorCode::DeviceUnauthorized.as_str();
            Err(tool_error(code, &format!("no phone was bound ({status}): {message}"), None))
        }
    }
}

async fn call(
    app: &App,
    s: &McpSession,
    params: &Map<String, Value>,
    host: &str,
    hooks: Hooks,
) -> Result<Value, String> {
    let name = params.get("name").and_then(Value::as_str).ok_or("tools/call needs params.name")?;
    let args = match params.get("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a.clone(),
        Some(_) => return Err("tools/call params.arguments must be an object".into()),
    };
    let bound = || app.hub.binding(&s.channel).is_some();
    if name == SELECT_DEVICE {
        let _bind = s.bind.lock().await;
        if bound() {
            s.local.request("auth.logout", Some(&s.channel), Map::new()).await;
        }
        let bound = match bind(s, args).await {
            Ok(p) => p,
            Err(e) => return Ok(e),
        };
        // The screen, as android_device_status reads it (what a select answers besides the phone and its lease).
        let payload = obj([
            ("tool_id", json!("android_device_status")),
            ("arguments", json!({"connector_channel_id": s.channel})),
        ]);
        let status = s.local.call(&s.channel, payload, hooks).await;
        let status = status.error.is_none().then(|| status.payload().remove("result")).flatten();
        let mut selected = tools::selected(app, &s.channel, status.as_ref(), IDLE.as_secs());
        // What the phone's last release put back and what it could not (issue 47 item 3), beside how this
        // session's lease ends.
        if let (Some(Value::Object(l)), Some(Value::Object(m))) = (bound.get("lease"), selected.get_mut("lease")) {
            m.extend(l.clone());
        }
        return Ok(structured(selected));
    }
    if name == LIST_DEVICES {
        return Ok(structured(tools::list_devices(app, &s.channel)));
    }
    if name == RELEASE_DEVICE {
        let _bind = s.bind.lock().await;
        let held = app.hub.binding(&s.channel).map(|k| k.serial);
        if held.is_some() {
            let ack = s.local.request("auth.logout", Some(&s.channel), Map::new()).await;
            if let Some(e) = packet_error(&ack) {
                return Ok(e);
            }
        }
        return Ok(structured(json!({"released": held.is_some(), "serial": held})));
    }
    if !bound() {
        let _bind = s.bind.lock().await;
        if !bound() {
            if let Err(e) = bind(s, Map::new()).await {
                return Ok(e);
            }
        }
    }
    let mut arguments = args;
    arguments.insert("connector_channel_id".into(), json!(s.channel));
    let mut payload = obj([("tool_id", json!(name)), ("arguments", Value::Object(arguments))]);
    // A retry-safe call identity, as `payload.context.tool_call_id` of `tool.invoke`.
    if let Some(call_id) = params.get("_meta").and_then(|m| m.get("tool_call_id")).and_then(Value::as_str) {
        payload.insert("context".into(), json!({"tool_call_id": call_id}));
    }
    let ack = s.local.call(&s.channel, payload, hooks).await;
    if let Some(e) = packet_error(&ack) {
        return Ok(e);
    }
    let mut result = ack.payload().remove("result").unwrap_or(Value::Null);
    let mut files = Vec::new();
    if let Some(Value::Array(listed)) = result.get_mut("files") {
        let mut kept = Vec::new();
        for f in listed.drain(..) {
            let c = file_content(app, &s.channel, &f, host).await;
            // An image inline is the file: its entry (name, one-time URL, size) would only repeat it.
            if c["type"] != "image" {
                kept.push(f);
            }
            files.push(c);
        }
        *listed = kept;
    }
    if result.get("files").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        result.as_object_mut().map(|m| m.remove("files"));
    }
    // What the model reads: elements one per line (server/mcp_text.rs); structuredContent keeps the full JSON.
    let mut content = vec![json!({"type": "text", "text": super::mcp_text::render(&result)})];
    content.extend(files);
    let mut out = json!({"content": content});
    if result.is_object() {
        out["structuredContent"] = result;
    }
    Ok(out)
}

/// A result of an MCP-only tool: its JSON as text and as structured content.
fn structured(v: Value) -> Value {
    json!({"content": [{"type": "text", "text": v.to_string()}], "structuredContent": v})
}

/// `MCP: <clientInfo.name> <version>` for the wall and `/api/v1/devices`: the client names itself, so the words
/// are treated like a phone's (printable, no bidi controls: `device::text::phone_text`) and bounded.
fn client_label(info: Option<&Value>) -> String {
    let field = |k: &str| {
        let v = info.and_then(|i| i.get(k)).and_then(Value::as_str).unwrap_or("");
        crate::device::text::phone_text(v, MAX_CLIENT_NAME)
    };
    let (name, version) = (field("name"), field("version"));
    let name = if name.is_empty() { "unnamed client".to_owned() } else { name };
    if version.is_empty() {
        format!("MCP: {name}")
    } else {
        format!("MCP: {name} {version}")
    }
}

/// A progress token as the specification has it: a string or an integer (not a boolean, not a float).
fn is_token(t: &Value) -> bool {
    t.is_string() || t.is_i64() || t.is_u64()
}

/// One running `tools/call` in its session's table, removed when the request is done (answered, cancelled, or its
/// HTTP connection gone).
struct Running {
    session: Arc<McpSession>,
    key: String,
    /// Which entry is this one's (a later call may reuse the id).
    serial: u64,
    cancel: CancellationToken,
}

impl Running {
    fn new(session: &Arc<McpSession>, id: &Value) -> Running {
        static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let serial = SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (key, cancel) = (id.to_string(), CancellationToken::new());
        let mut map = session.running.lock().unwrap_or_else(|e| e.into_inner());
        // A client reusing the id of a call still running: the new one is the one a cancel names.
        map.insert(key.clone(), (serial, cancel.clone()));
        Running { session: session.clone(), key, serial, cancel }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let mut map = self.session.running.lock().unwrap_or_else(|e| e.into_inner());
        if map.get(&self.key).is_some_and(|(serial, _)| *serial == self.serial) {
            map.remove(&self.key);
        }
    }
}

/// `notifications/cancelled`: the named running call is stopped the way a channel close stops one (its future
/// dropped, its device command hung up; `server::ws::tool`), audited with its outcome, and not answered. An unknown
/// or finished id is ignored, as the specification says.
fn cancelled(s: &McpSession, params: Option<&Value>) {
    let Some(id) = params.and_then(|p| p.get("requestId")) else { return };
    let token = s.running.lock().unwrap_or_else(|e| e.into_inner()).get(&id.to_string()).map(|(_, t)| t.clone());
    if let Some(t) = token {
        tracing::info!(channel = %s.channel, "MCP client cancelled a running tools/call");
        t.cancel();
    }
}

fn sse_event(v: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {v}\n\n"))
}

/// A `tools/call`, answered while it runs. With `_meta.progressToken` the answer is an event stream
/// (`text/event-stream`) of `notifications/progress` — the steps the tool reports (`tool.progress.push`: an upload's
/// bytes, a wait's polls) and, at least every [`HEARTBEAT`], the time elapsed — then the JSON-RPC
/// response as its last event. `progress` is the seconds elapsed (it must grow with every notification, and not every
/// call has a fraction); the tool's fraction, when it has one, is in the message. Without a token the answer is one
/// JSON body, preceded by a space every [`HEARTBEAT`] (JSON's own whitespace).
///
/// Both keep writing for the same reason: hyper does not read an HTTP/1 connection while its answer is pending, so a
/// client that went away is noticed only by a write that fails — and then the call is cancelled (its future dropped,
/// its device command hung up), as it is by `notifications/cancelled`. A cancelled request is not answered (MCP
/// "Cancellation"): its stream or body just ends. Bounded: [`STREAM_QUEUE`] chunks, each write under the connection's
/// write deadline (`server::stall`); a client that stops reading loses the connection and the call.
#[allow(clippy::too_many_arguments)]
fn stream(
    app: Arc<App>,
    session: Arc<McpSession>,
    id: Value,
    params: Map<String, Value>,
    host: String,
    token: Option<Value>,
    running: Running,
    deadline: Option<WriteDeadline>,
) -> Response<Body> {
    let stall = app.cfg.limits.ws_write_timeout;
    if let Some(d) = &deadline {
        d.arm(stall);
    }
    let sse = token.is_some();
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(STREAM_QUEUE);
    tokio::spawn(async move {
        let _guard = app.tasks.enter();
        let (ptx, mut prx) = tokio::sync::mpsc::channel::<Packet>(STREAM_QUEUE);
        let cancel = running.cancel.clone();
        let hooks = Hooks { cancel: cancel.clone(), progress: sse.then_some(ptx) };
        let work = call(&app, &session, &params, &host, hooks);
        tokio::pin!(work);
        let started = Instant::now();
        let mut last = 0.0f64;
        let mut beat = tokio::time::interval_at((started + HEARTBEAT).into(), HEARTBEAT);
        beat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut progress = |message: String| {
            let Some(token) = &token else { return Bytes::from_static(b" ") };
            // Milliseconds, strictly growing (two events in one millisecond still grow).
            let now = (started.elapsed().as_millis() as f64 / 1000.0).max(last + 0.001);
            last = now;
            let params = json!({"progressToken": token, "progress": now, "message": message});
            sse_event(&json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}))
        };
        let send = |bytes: Bytes| {
            let tx = tx.clone();
            async move { matches!(tokio::time::timeout(stall, tx.send(bytes)).await, Ok(Ok(()))) }
        };
        loop {
            let chunk = tokio::select! {
                r = &mut work => {
                    if cancel.is_cancelled() {
                        return; // not answered: the stream (or the body) ends here
                    }
                    let reply = match r {
                        Ok(result) => rpc_result(&id, result),
                        Err(message) => rpc_error(&id, -32602, &message),
                    };
                    send(if sse { sse_event(&reply) } else { Bytes::from(reply.to_string()) }).await;
                    return;
                }
                // The answer's body was dropped (the connection ended, or its write deadline passed): the call is
                // cancelled; dropping `work` here drops the call's future (whose own guard cancels it as well).
                _ = tx.closed() => {
                    cancel.cancel();
                    return;
                }
                Some(p) = prx.recv() => {
                    let pl = p.payload();
                    let mut m = pl.get("message").and_then(Value::as_str).unwrap_or("running").to_owned();
                    if let Some(f) = pl.get("progress").and_then(Value::as_f64) {
                        m.push_str(&format!(" ({:.0} %)", f * 100.0));
                    }
                    progress(m)
                }
                _ = beat.tick() => progress(format!("running, {:.1} s elapsed", started.elapsed().as_secs_f64())),
            };
            if !send(chunk).await {
                cancel.cancel();
                return;
            }
        }
    });
    let body = StreamBody::new(futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|b| (Ok::<_, std::io::Error>(Frame::data(b)), rx))
    }));
    let mut r = Response::new(body.boxed());
    let kind = if sse { "text/event-stream" } else { "application/json" };
    r.headers_mut().insert(hyper::header::CONTENT_TYPE, HeaderValue::from_static(kind));
    r.headers_mut().insert(hyper::header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

/// A file of a result: an image small enough inline (its one-time URL still unused), anything else a resource
/// link to that URL.
async fn file_content(app: &App, channel: &str, f: &Value, host: &str) -> Value {
    let s = |k: &str| f.get(k).and_then(Value::as_str).unwrap_or("");
    let (mime, size) = (s("mime_type"), f.get("byte_size").and_then(Value::as_u64).unwrap_or(u64::MAX));
    if mime.starts_with("image/") && size <= MAX_INLINE_IMAGE {
        if let Some(row) = app.files.get(s("file_ref")).filter(|r| r.channel_id == channel) {
            let path = app.files.path(&row);
            if let Ok(bytes) = tokio::fs::read(&path).await {
                if bytes.len() as u64 <= MAX_INLINE_IMAGE {
                    return json!({"type": "image", "data": crate::base64::encode(&bytes), "mimeType": mime});
                }
            }
        }
    }
    let url = s("download_url");
    let uri = if host.is_empty() { url.to_owned() } else { format!("http://{host}{url}") };
    json!({"type": "resource_link", "uri": uri, "name": s("filename"), "mimeType": mime, "size": f.get("byte_size")})
}
