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
use crate::server::state::App;
use crate::server::tracker::Tracker;

/// Requests waiting for their reply, by `request_id`.
type Waiters = Arc<Mutex<HashMap<String, oneshot::Sender<Packet>>>>;
/// Where a running call's `tool.progress.push` goes, by its request's `packet_id` (the push's `reply_to`).
type Listeners = Arc<Mutex<HashMap<String, mpsc::Sender<Packet>>>>;

/// What one request of [`Local::call`] brings besides its packet.
#[derive(Default)]
pub struct Hooks {
    /// Cancelled by the caller: a tool call this request started is stopped (its future dropped, as a channel
    /// close stops it). Dropping the request's future cancels it too: a caller gone wants nothing more done.
    pub cancel: tokio_util::sync::CancellationToken,
    /// Receives the call's progress pushes; full or gone, a push is dropped (progress is advisory, §8.20).
    pub progress: Option<mpsc::Sender<Packet>>,
}

pub struct Local {
    /// The dispatcher takes the session mutably; calls of one MCP session are dispatched one after another (a
    /// `tool.invoke` only starts its call there, so they still run concurrently).
    session: tokio::sync::Mutex<Session>,
    waiters: Waiters,
    listeners: Listeners,
    pump: tokio::task::JoinHandle<()>,
}

/// Removes a waiter (and its progress listener) whose caller is done or went away (the HTTP client hung up): its
/// reply, when it comes, is dropped.
struct Unwait<'a>(&'a Local, String, String);

impl Drop for Unwait<'_> {
    fn drop(&mut self) {
        self.0.waiters.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.1);
        self.0.listeners.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.2);
    }
}

impl Local {
    /// Registers a socket with the hub whose packets come back here instead of going to a WebSocket.
    pub fn new(app: Arc<App>) -> Local {
        let (tx, mut rx) = mpsc::channel::<Packet>(app.cfg.outbound_queue);
        let socket = app.hub.register_socket(tx.clone());
        let waiters: Waiters = Arc::default();
        let listeners: Listeners = Arc::default();
        let (w, l) = (waiters.clone(), listeners.clone());
        let pump = tokio::spawn(async move {
            while let Some(p) = rx.recv().await {
                let waiter =
                    p.request_id.as_ref().and_then(|id| w.lock().unwrap_or_else(|e| e.into_inner()).remove(id));
                if let Some(tx) = waiter {
                    let _ = tx.send(p);
                    continue;
                }
                let listener = (p.kind == "tool.progress.push")
                    .then(|| {
                        p.reply_to.as_ref().and_then(|id| l.lock().unwrap_or_else(|e| e.into_inner()).get(id).cloned())
                    })
                    .flatten();
                match listener {
                    // Never waits: the pump also carries every other call's ack.
                    Some(tx) => drop(tx.try_send(p)),
                    // Other pushes (descriptor changes), or progress nobody asked for.
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
            request_cancel: None,
        };
        Local { session: tokio::sync::Mutex::new(session), waiters, listeners, pump }
    }

    /// Sends one request through the dispatcher and waits for the packet that answers it (its ack or `error`).
    pub async fn request(&self, kind: &str, channel: Option<&str>, payload: Map<String, Value>) -> Packet {
        let pkt = Packet::request(kind, channel, payload);
        let id = pkt.request_id.clone().expect("requests carry a request_id");
        let (tx, rx) = oneshot::channel();
        self.waiters.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), tx);
        let _unwait = Unwait(self, id, String::new());
        // Through the frame parser too: the packet is checked exactly as one from a socket.
        super::dispatch::on_text(&mut *self.session.lock().await, &pkt.to_json()).await;
        Self::reply(rx).await
    }

    /// [`Local::request`] for a `tool.invoke` that its caller may cancel and whose progress it hears (`hooks`).
    pub async fn call(&self, channel: &str, payload: Map<String, Value>, hooks: Hooks) -> Packet {
        let pkt = Packet::request("tool.invoke", Some(channel), payload);
        let id = pkt.request_id.clone().expect("requests carry a request_id");
        let (tx, rx) = oneshot::channel();
        self.waiters.lock().unwrap_or_else(|e| e.into_inner()).insert(id.clone(), tx);
        if let Some(p) = hooks.progress {
            self.listeners.lock().unwrap_or_else(|e| e.into_inner()).insert(pkt.packet_id.clone(), p);
        }
        let _unwait = Unwait(self, id, pkt.packet_id.clone());
        // Cancels the call when this future is dropped before its answer (the HTTP connection closed).
        let gone = hooks.cancel.clone().drop_guard();
        {
            let mut session = self.session.lock().await;
            session.request_cancel = Some(hooks.cancel);
            super::dispatch::on_text(&mut session, &pkt.to_json()).await;
            // A packet refused before `tool::invoke` took it leaves it here: never inherited by the next one.
            session.request_cancel = None;
        }
        let answer = Self::reply(rx).await;
        // Answered: nothing to cancel any more.
        gone.disarm();
        answer
    }

    async fn reply(rx: oneshot::Receiver<Packet>) -> Packet {
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
