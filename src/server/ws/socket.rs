//! One WebSocket session's loops: a reader that parses and dispatches packets, a writer that drains the socket's
//! bounded outbound queue, and the bookkeeping that ties the socket to the hub.
//!
//! Backpressure: every ack, error and pong is `send().await`ed into the queue, so a slow peer slows our reading of
//! its requests instead of losing replies. Only `tool.progress.push` uses `try_send` and may be dropped.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures_util::{SinkExt, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::CloseFrame;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::WebSocketStream;
use tracing::Instrument;

use super::session::Session;
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::Packet;
use crate::server::state::App;
use crate::server::tracker::Tracker;

pub async fn run<S>(app: Arc<App>, ws: WebSocketStream<S>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::channel::<Packet>(app.cfg.outbound_queue);
    let socket = app.hub.register_socket(tx.clone());
    let metrics = app.metrics.clone();
    metrics.ws_connections.fetch_add(1, Ordering::Relaxed);
    metrics.ws_connections_total.fetch_add(1, Ordering::Relaxed);
    let writer_metrics = metrics.clone();
    let capacity = app.cfg.outbound_queue;
    let span = tracing::info_span!("ws", socket);
    let (mut sink, mut stream) = ws.split();
    let (close_tx, mut close_rx) = oneshot::channel::<Option<CloseFrame>>();

    // The writer tells the reader when the peer stopped reading (a write stalled past `ws_write_timeout`).
    let (stalled_tx, stalled_rx) = oneshot::channel::<()>();
    let pong_due = Arc::new(tokio::sync::Notify::new());
    let writer_pong = pong_due.clone();
    let stall = app.cfg.limits.ws_write_timeout;
    let writer = tokio::spawn(
        async move {
            let mut queue_open = true;
            let mut stalled_tx = Some(stalled_tx);
            // Every write is bounded: a peer that does not read cannot hold the session (or our memory) forever.
            macro_rules! write_or_stop {
                ($fut:expr) => {
                    match tokio::time::timeout(stall, $fut).await {
                        Ok(Ok(_)) => {}
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "websocket write failed; closing");
                            if let Some(t) = stalled_tx.take() {
                                let _ = t.send(());
                            }
                            return;
                        }
                        Err(_) => {
                            tracing::warn!(timeout_ms = stall.as_millis() as u64, "peer stopped reading; closing");
                            if let Some(t) = stalled_tx.take() {
                                let _ = t.send(());
                            }
                            return;
                        }
                    }
                };
            }
            loop {
                tokio::select! {
                    biased;
                    p = rx.recv(), if queue_open => match p {
                        Some(p) => {
                            let depth = (capacity - rx.capacity() + 1) as u64;
                            writer_metrics.queue_depth_max.fetch_max(depth, Ordering::Relaxed);
                            writer_metrics.packets_out.fetch_add(1, Ordering::Relaxed);
                            write_or_stop!(sink.send(Message::text(p.to_json())));
                        }
                        // Every sender is gone; the close frame (if any) is still to come.
                        None => queue_open = false,
                    },
                    // tungstenite queued a pong for a ping: push it out, so a peer that pings without reading is
                    // noticed (the flush stalls) instead of going unnoticed until the write buffer is full.
                    _ = writer_pong.notified() => write_or_stop!(sink.flush()),
                    frame = &mut close_rx => {
                        // Everything queued before the close (acks of drained tools) still goes out first.
                        while let Ok(p) = rx.try_recv() {
                            write_or_stop!(sink.send(Message::text(p.to_json())));
                        }
                        if let Ok(Some(f)) = frame {
                            write_or_stop!(sink.send(Message::Close(Some(f))));
                        }
                        let _ = tokio::time::timeout(stall, sink.close()).await;
                        return;
                    }
                }
            }
        }
        .instrument(span.clone()),
    );

    let mut session = Session {
        app: app.clone(),
        socket,
        tx,
        hello_done: false,
        in_flight: Tracker::default(),
        cancel: tokio_util::sync::CancellationToken::new(),
        channel_cancel: std::collections::HashMap::new(),
        request_cancel: None,
    };
    tracing::info!(parent: &span, "data plane connected");
    let close = read_loop(&mut session, &mut stream, stalled_rx, &pong_due).instrument(span.clone()).await;
    let shutting_down = *app.shutdown.borrow();
    if shutting_down {
        // SIGTERM: let running tool calls finish and deliver their acks, within the drain bound.
        if tokio::time::timeout(app.cfg.drain_timeout, session.in_flight.wait()).await.is_err() {
            tracing::warn!(parent: &span, "tool calls still running at the drain deadline; cancelling them");
            session.cancel.cancel();
            // Cancelled calls answer at once (`shutting_down`); give their acks a moment to be queued.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), session.in_flight.wait()).await;
        }
    } else {
        // The peer is gone: nobody will read the acks, so running calls are cancelled and their device commands hung
        // up now (a reconnecting xAgent that repeats a tool_call_id learns the call was cancelled).
        session.cancel.cancel();
    }
    app.hub.socket_closed(socket);
    // Read counts go into the audit chain when a data plane closes (`audit::reads`).
    app.hub.flush_reads_soon();
    let _ = close_tx.send(close);
    drop(session);
    let _ = writer.await;
    metrics.ws_connections.fetch_sub(1, Ordering::Relaxed);
    tracing::info!(parent: &span, "data plane closed");
}

/// Reads until the peer leaves, a fatal frame arrives or shutdown starts. Returns the close frame to send.
async fn read_loop<S>(
    session: &mut Session,
    stream: &mut futures_util::stream::SplitStream<WebSocketStream<S>>,
    mut stalled: oneshot::Receiver<()>,
    pong_due: &tokio::sync::Notify,
) -> Option<CloseFrame>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut shutdown = session.app.shutdown.clone();
    let hello_timeout = session.app.cfg.limits.hello_timeout;
    let hello_deadline = tokio::time::sleep(hello_timeout);
    tokio::pin!(hello_deadline);
    loop {
        let msg = tokio::select! {
            _ = shutdown.changed() => {
                return Some(CloseFrame { code: CloseCode::Away, reason: "connector shutting down".into() });
            }
            _ = &mut stalled => {
                // The writer gave up on this peer; a close frame would not be read either.
                return Some(CloseFrame { code: CloseCode::Policy, reason: "peer does not read".into() });
            }
            _ = &mut hello_deadline, if !session.hello_done => {
                tracing::info!(timeout_ms = hello_timeout.as_millis() as u64, "no connector.hello in time; closing");
                return Some(CloseFrame { code: CloseCode::Policy, reason: "connector.hello not received in time".into() });
            }
            m = stream.next() => m,
        };
        match msg {
            None => return None,
            Some(Ok(Message::Text(text))) => {
                session.app.metrics.packets_in.fetch_add(1, Ordering::Relaxed);
                super::dispatch::on_text(session, text.as_str()).await
            }
            Some(Ok(Message::Binary(_))) => {
                // "只传 WebSocket TextMessage" (§6).
                let err = ProtoError::new(
                    ErrorCode::InvalidPacket,
                    "binary frames are not part of the protocol; send one JSON packet per text frame",
                );
                session.send(Packet::error_reply(None, None, None, &err)).await;
            }
            Some(Ok(Message::Close(_))) => return Some(CloseFrame { code: CloseCode::Normal, reason: "".into() }),
            // tungstenite queues the pong itself (only the latest one, in a bounded buffer); the writer flushes it.
            Some(Ok(Message::Ping(_))) => pong_due.notify_one(),
            Some(Ok(_)) => {}
            Some(Err(WsError::Capacity(e))) => {
                let limit = session.app.cfg.max_message_bytes;
                tracing::warn!(error = %e, limit, "oversized websocket message refused");
                let err = ProtoError::new(
                    ErrorCode::InvalidPacket,
                    format!("message exceeds the {limit}-byte limit of this connector"),
                );
                session.send(Packet::error_reply(None, None, None, &err)).await;
                return Some(CloseFrame { code: CloseCode::Size, reason: "message too big".into() });
            }
            // RFC 6455 §7.4.1: a frame that breaks the protocol (reserved opcode or bits, bad control frame) is
            // answered 1002, a text frame that is not UTF-8 1007 — a code, not a bare close, so clients can tell.
            Some(Err(WsError::Protocol(e))) => {
                tracing::debug!(error = %e, "websocket protocol violation");
                return Some(CloseFrame { code: CloseCode::Protocol, reason: "protocol error".into() });
            }
            Some(Err(WsError::Utf8(e))) => {
                tracing::debug!(error = %e, "websocket text frame is not UTF-8");
                return Some(CloseFrame { code: CloseCode::Invalid, reason: "text frame is not valid UTF-8".into() });
            }
            Some(Err(e)) => {
                tracing::debug!(error = %e, "websocket read ended");
                return None;
            }
        }
    }
}
