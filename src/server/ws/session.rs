//! One data-plane session's state: its socket in the hub, its outbound queue, its running calls and their
//! cancellation. What the dispatcher and the handlers work on; the socket's reader and writer loops are
//! `socket.rs`, the in-process session `local.rs`.

use std::sync::Arc;

use tokio::sync::mpsc;

use super::fields::log_str;
use super::slots::ChannelSlot;
use crate::channels::SocketId;
use crate::protocol::errors::ProtoError;
use crate::protocol::Packet;
use crate::server::state::App;
use crate::server::tracker::Tracker;

pub struct Session {
    pub app: Arc<App>,
    pub socket: SocketId,
    pub tx: mpsc::Sender<Packet>,
    pub hello_done: bool,
    /// Tool calls of this session still running.
    pub in_flight: Tracker,
    /// Cancels every running tool call of this session (socket gone, drain deadline); each channel has a child
    /// token that `channel.close` / `auth.logout` cancel. A cancelled call's future is dropped, which closes its adb
    /// connection and hangs up its device command (see `device::transport`).
    pub cancel: tokio_util::sync::CancellationToken,
    pub channel_cancel: std::collections::HashMap<String, tokio_util::sync::CancellationToken>,
    /// Set by the in-process client ([`super::local`]) for the one packet it dispatches next, under the session's
    /// lock: a tool call that packet starts also ends when this token is cancelled — the way one MCP request is
    /// cancelled (`notifications/cancelled`, or its HTTP connection gone) without touching the channel's other calls.
    /// Always `None` on a WebSocket session: the xAgent plane cancels by channel and socket only.
    pub request_cancel: Option<tokio_util::sync::CancellationToken>,
}

impl Session {
    /// Takes a slot in `channel`'s concurrency budget, or `None` when it is full.
    pub fn channel_slot(&self, channel: &str) -> Option<ChannelSlot> {
        ChannelSlot::take(&self.app.channel_slots, channel)
    }

    /// The token a new tool call on `channel` watches.
    pub fn call_cancel(&mut self, channel: &str) -> tokio_util::sync::CancellationToken {
        let cancel = &self.cancel;
        self.channel_cancel.entry(channel.to_owned()).or_insert_with(|| cancel.child_token()).clone()
    }

    /// Cancels the running tool calls of `channel` (it was closed or logged out).
    pub fn cancel_channel(&mut self, channel: &str) {
        if let Some(t) = self.channel_cancel.remove(channel) {
            t.cancel();
        }
    }

    /// Queues a packet that must not be dropped (ack, error, pong): waits for queue space.
    pub async fn send(&self, p: Packet) {
        let _ = self.tx.send(p).await;
    }

    pub async fn send_error(&self, req: &Packet, err: ProtoError) {
        let kind = log_str(&req.kind);
        tracing::debug!(code = err.code.as_str(), %kind, "error packet");
        self.send(Packet::error_reply(
            req.request_id.clone(),
            Some(req.packet_id.clone()),
            req.connector_channel_id.clone(),
            &err,
        ))
        .await;
    }
}
