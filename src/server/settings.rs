//! The server's settings: what the wiring (`run.rs`) fills in from the command line, and the caps against hostile
//! clients. Plain data, so every file of the room can read them.

use std::time::Duration;

/// Runtime settings of the HTTP/WS server.
pub struct ServerConfig {
    /// System API key; `None` leaves `/health`, `/ws` and uploads open (a warning is logged at start).
    pub api_key: Option<String>,
    /// Largest accepted WebSocket message (and frame), in bytes.
    pub max_message_bytes: usize,
    /// Capacity of each socket's outbound queue (packets).
    pub outbound_queue: usize,
    /// How long in-flight tool calls may run after SIGTERM before the sockets close anyway.
    pub drain_timeout: Duration,
    pub max_connections: usize,
    /// Largest accepted upload (`POST /files/uploads`), in bytes of file content.
    pub upload_max_bytes: u64,
    /// Caps against hostile or runaway clients (see [`Limits`]).
    pub limits: Limits,
    /// Host names (besides IP literals and localhost) a browser may use to reach the wall when there is no key
    /// (`--allowed-host`; see [`origin`]).
    pub allowed_hosts: Vec<String>,
}

/// Caps that keep one client (with or without the key) from exhausting memory, disk, sockets or the hub.
/// Each is documented in README's configuration table and in device-profile/README.md.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Open WebSocket sessions at once; the next upgrade gets 503 `too_many_sessions`.
    pub max_sessions: usize,
    /// Open MCP sessions at once, a budget of their own; the least recently used idle one makes room for a new one.
    pub max_mcp_sessions: usize,
    /// An MCP session holding no phone (and running nothing) ends after this long without a request.
    pub mcp_unbound_idle: Duration,
    /// Channels the connector keeps (open or waiting for their instance); `channel.open` beyond is `rate_limited`.
    pub max_channels: usize,
    /// Open TCP connections from one IP address; more are closed at accept, so one host cannot starve others.
    pub max_connections_per_ip: usize,
    /// A connection must deliver a complete request head within this time (slowloris).
    pub header_timeout: Duration,
    /// A small request body (login, anything but an upload) must arrive whole within this time after its head.
    pub body_timeout: Duration,
    /// A WebSocket session must complete `connector.hello` within this time, or it is closed (1008).
    pub hello_timeout: Duration,
    /// Longest a write to a WebSocket peer may stall (the peer does not read); then the session is closed.
    pub ws_write_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_sessions: 64,
            max_mcp_sessions: 32,
            mcp_unbound_idle: Duration::from_secs(2 * 60),
            max_channels: 1000,
            max_connections_per_ip: 128,
            header_timeout: Duration::from_secs(5),
            body_timeout: Duration::from_secs(5),
            hello_timeout: Duration::from_secs(10),
            ws_write_timeout: Duration::from_secs(10),
        }
    }
}
