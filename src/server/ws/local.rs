//! An in-process data-plane client: a [`Session`] with no socket under it, fed packets it builds itself and read
//! back by `request_id`. The MCP endpoint (`server::mcp`) drives phones through it, so an MCP call takes exactly the
//! path a `tool.invoke` frame takes (`dispatch::on_text`: hello, channel ownership, binding, allowlist, takeover,
//! validation against the served schema, idempotency, deadline, settle, audit) — nothing is re-implemented beside it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use super::session::Session;
use crate::protocol::Packet;
use crate::server::{App, Tracker};

/// Requests waiting for their reply, by `request_id`.
type Waiters = Arc<Mutex<HashMap<String, oneshot::Sender<Packet>>>>;

pub struct Local {
    /// The dispatcher takes the session mutably; calls of one MCP session are dispatched one after another (a
    /// `tool.invoke` only starts its call there, so they still run concurrently).
    session: tokio::sync::Mutex<Session>,
    waiters: Waiters,
    pump: tokio::task::JoinHandle<()>,
}

/// Removes a waiter whose caller went away (the HTTP client hung up): its reply, when it comes, is dropped.
struct Unwait<'a>(&'a Waiters, String);

impl Drop for Unwait<'_> {
    fn drop(&mut self) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.1);
    }
}

impl Local {
    /// Registers a socket with the hub whose packets come back here instead of going to a WebSocket.
    pub fn new(app: Arc<App>) -> Local {
        let (tx, mut rx) = mpsc::channel::<Packet>(app.cfg.outbound_queue);
        let socket = app.hub.register_socket(tx.clone());
        let waiters: Waiters = Arc::default();
        let w = waiters.clone();
        let pump = tokio::spawn(async move {
            while let Some(p) = rx.recv().await {
                let waiter =
                    p.request_id.as_ref().and_then(|id| w.lock().unwrap_or_else(|e| e.into_inner()).remove(id));
                match waiter {
                    Some(tx) => {
                        let _ = tx.send(p);
                    }
                    // Pushes (descriptor changes, progress): nothing of the MCP session waits for them.
                    None => tracing::debug!(kind = %p.kind, "in-process data plane: push not forwarded"),
                }
            }
        });
        let session = Session {
            app,
            socket,
            tx,
            hello_done: false,
            in_flight: Tracker::default(),
            cancel: tokio_util::sync::CancellationToken::new(),
            channel_cancel: HashMap::new(),
        };
        Local { session: tokio::sync::Mutex::new(session), waiters, pump }
    }

    /// Sends one request through the dispatcher and waits for the packet that answers it (its ack or `error`).
    pub async fn request(&self, kind: &str, channel: Option<&str>, payload: Map<String, Value>) -> Packet {
        let pkt = Packet::request(kind, channel, payload);
        let id = pkt.request_id.clone().expect("requests carry a request_id");
        let (tx, rx) = oneshot::channel();
        self.waiters.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), tx);
        let _unwait = Unwait(&self.waiters, id);
        // Through the frame parser too: the packet is checked exactly as one from a socket.
        super::dispatch::on_text(&mut *self.session.lock().await, &pkt.to_json()).await;
        // Every request is answered (acks and errors are never dropped); the pump ends only with the session.
        rx.await.unwrap_or_else(|_| {
            let err = crate::protocol::errors::ProtoError::new(
                crate::protocol::errors::ErrorCode::Internal,
                "the in-process data plane closed before the request was answered",
            );
            Packet::error_reply(None, None, None, &err)
        })
    }

    /// The socket is gone: running calls are cancelled (their device commands hung up), the hub forgets the socket.
    pub async fn close(&self) {
        let session = self.session.lock().await;
        session.cancel.cancel();
        session.app.hub.socket_closed(session.socket);
        session.app.hub.flush_reads_soon();
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        self.pump.abort();
    }
}
