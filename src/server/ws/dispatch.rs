//! Packet type → handler. The order of checks is the protocol's: envelope (§7), hello first (§6), channel
//! ownership (§8.18), then the packet's own rules.

use serde_json::{json, Map, Value};

use super::fields::log_str;
use super::session::Session;
use crate::channels::to_value;
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::packet::obj;
use crate::protocol::{self as proto, Packet};
use crate::server::log_gate::LogGate;

/// Requests xAgent sends; each must carry a `request_id` ("请求和 ack 必填", §7).
const REQUESTS: &[&str] = &[
    "connector.hello",
    "channel.open",
    "channel.close",
    "auth.start",
    "auth.status",
    "auth.cancel",
    "auth.logout",
    "connection.descriptor.get",
    "tool.invoke",
    "ping",
];

/// Longest accepted client identifier (`packet_id`, `request_id`, `connector_channel_id`, `type`, `tool_id`,
/// `tool_call_id`, `flow_id`, ...). These are stored (idempotency records, audit log) and logged, so they are bounded;
/// the protocol's own ids are far shorter.
pub const MAX_ID_LEN: usize = 128;

/// `Some(field)` names the first client identifier longer than [`MAX_ID_LEN`].
fn overlong_field(pkt: &Packet) -> Option<&'static str> {
    let long = |s: Option<&str>| s.is_some_and(|s| s.len() > MAX_ID_LEN);
    if long(Some(&pkt.packet_id)) {
        return Some("packet_id");
    }
    if long(pkt.request_id.as_deref()) {
        return Some("request_id");
    }
    if long(pkt.connector_channel_id.as_deref()) {
        return Some("connector_channel_id");
    }
    if long(Some(&pkt.kind)) {
        return Some("type");
    }
    let payload = pkt.payload.as_ref()?;
    for f in ["tool_id", "flow_id", "auth_session_id", "connector_id", "connector_card_id"] {
        if long(payload.get(f).and_then(Value::as_str)) {
            return Some(f);
        }
    }
    let ctx = payload.get("context").and_then(Value::as_object);
    if long(ctx.and_then(|c| c.get("tool_call_id")).and_then(Value::as_str)) {
        return Some("context.tool_call_id");
    }
    None
}

pub async fn on_text(session: &mut Session, text: &str) {
    let pkt = match Packet::parse(text) {
        Ok(p) => p,
        Err(f) => {
            tracing::debug!(error = %f.error, "invalid packet");
            let cut = |s: Option<String>| s.filter(|s| s.len() <= MAX_ID_LEN);
            let (rid, pid, ch) = (cut(f.request_id), cut(f.packet_id), cut(f.connector_channel_id));
            session.send(Packet::error_reply(rid, pid, ch, &f.error)).await;
            return;
        }
    };
    if let Some(field) = overlong_field(&pkt) {
        static GATE: LogGate = LogGate::new();
        if let Some(suppressed) = GATE.allow() {
            tracing::info!(field, suppressed, "packet refused: identifier too long");
        }
        let err = ProtoError::new(
            ErrorCode::InvalidPacket,
            format!("`{field}` is longer than {MAX_ID_LEN} bytes; identifiers are bounded"),
        );
        // Echoing an overlong id back would defeat the bound: only ids within it are routed back.
        let cut = |s: &Option<String>| s.clone().filter(|s| s.len() <= MAX_ID_LEN);
        let pid = Some(pkt.packet_id.clone()).filter(|s| s.len() <= MAX_ID_LEN);
        let reply = Packet::error_reply(cut(&pkt.request_id), pid, cut(&pkt.connector_channel_id), &err);
        return session.send(reply).await;
    }
    if REQUESTS.contains(&pkt.kind.as_str()) && pkt.request_id.as_deref().is_none_or(str::is_empty) {
        let err = ProtoError::new(
            ErrorCode::InvalidPacket,
            format!("{} is a request and needs a non-empty request_id", pkt.kind),
        );
        return session.send_error(&pkt, err).await;
    }
    match pkt.kind.as_str() {
        // ping is connection-level: answered before and after hello ("pong 应带回同一个 request_id", §8.22).
        "ping" => session.send(pkt.ack("pong", pkt.connector_channel_id.as_deref(), Map::new())).await,
        "pong" | "error" => tracing::debug!(kind = %pkt.kind, "peer notice"),
        "connector.hello" => hello(session, &pkt).await,
        k if REQUESTS.contains(&k) && !session.hello_done => {
            // "connector.hello.ack 之前不能发送用户级 packet" (§6).
            session
                .send_error(
                    &pkt,
                    ProtoError::new(ErrorCode::HelloRequired, format!("{k} before connector.hello completed")),
                )
                .await
        }
        "channel.open" => channel_open(session, &pkt).await,
        "tool.invoke" => super::tool::invoke(session, pkt).await,
        "channel.close"
        | "auth.start"
        | "auth.status"
        | "auth.cancel"
        | "auth.logout"
        | "connection.descriptor.get" => {
            let channel = match session.app.hub.check_channel(session.socket, pkt.connector_channel_id.as_deref()) {
                Ok(c) => c,
                Err(e) => return session.send_error(&pkt, e).await,
            };
            channel_request(session, &pkt, &channel).await
        }
        other => {
            let err = ProtoError::new(
                ErrorCode::UnsupportedPacket,
                format!(
                    "packet type \"{}\" is not supported by this connector; it accepts {} (requests) and pong, error",
                    log_str(other),
                    REQUESTS.join(", ")
                ),
            );
            session.send_error(&pkt, err).await
        }
    }
}

async fn hello(session: &mut Session, pkt: &Packet) {
    match session.app.hub.hello(session.socket, &pkt.payload()) {
        Ok(ok) => {
            session.hello_done = true;
            tracing::info!(connector_id = %ok.connector_id, "hello accepted");
            let payload = obj([
                ("connector_card_id", json!(proto::CONNECTOR_CARD_ID)),
                ("connector_id", json!(ok.connector_id)),
                ("protocol_version", json!(proto::PROTOCOL_VERSION)),
            ]);
            session.send(pkt.ack("connector.hello.ack", None, payload)).await
        }
        Err(e) => {
            tracing::warn!(code = e.code.as_str(), "hello refused");
            session.send_error(pkt, e).await
        }
    }
}

async fn channel_open(session: &mut Session, pkt: &Packet) {
    let requested = pkt.connector_channel_id.as_deref().filter(|s| !s.is_empty());
    let hub = &session.app.hub;
    let max = session.app.cfg.limits.max_channels;
    // A new channel costs memory and a database row until its lease expires: their number is capped.
    if !requested.is_some_and(|r| hub.channel_exists(r)) && hub.stats().1 >= max {
        static GATE: LogGate = LogGate::new();
        if let Some(suppressed) = GATE.allow() {
            tracing::warn!(limit = max, suppressed, "channel.open refused: channel limit reached");
        }
        let err = ProtoError::new(
            ErrorCode::RateLimited,
            format!("this connector already keeps {max} channels (--max-channels); reuse or close channels"),
        );
        return session.send_error(pkt, err).await;
    }
    match session.app.hub.open_channel(session.socket, requested) {
        Ok((id, d)) => {
            tracing::info!(channel = %id, restored = (requested == Some(id.as_str())), "channel open");
            // §8.4: envelope connector_channel_id, payload.connector_channel_id and the descriptor are all required.
            let payload = obj([("connector_channel_id", json!(id)), ("connection_descriptor", to_value(&d))]);
            session.send(pkt.ack("channel.open.ack", Some(&id), payload)).await
        }
        Err(e) => session.send_error(pkt, e).await,
    }
}

async fn channel_request(session: &mut Session, pkt: &Packet, channel: &str) {
    if pkt.kind == "channel.close" {
        // The channel's running tool calls end now: their device commands are hung up. (`auth.logout` cuts them
        // through the binding's end, `Hub::logout`, which waits until they answered before the phone is free.)
        session.cancel_channel(channel);
    }
    let hub = &session.app.hub;
    let payload = pkt.payload();
    let ch = Some(channel);
    let reply = match pkt.kind.as_str() {
        "channel.close" => {
            hub.close_channel(channel);
            // The channel's read counts go into the audit chain now (`audit::reads`).
            hub.flush_reads_soon();
            crate::tools::observe::forget_channel(channel);
            tracing::info!(channel, "channel closed");
            pkt.ack("channel.close.ack", ch, obj([("status", json!("ok"))]))
        }
        "connection.descriptor.get" => {
            let d = hub.descriptor(channel);
            pkt.ack("connection.descriptor.get.ack", ch, obj([("connection_descriptor", to_value(&d))]))
        }
        "auth.start" => {
            let out = hub.auth_start_settled(channel, &payload).await;
            match out.error {
                None => pkt.ack("auth.start.ack", ch, out.payload),
                Some(e) => pkt.ack_error("auth.start.ack", ch, &e, Some(out.payload)),
            }
        }
        "auth.status" => match hub.auth_status_ready(channel, &payload).await {
            Ok(p) => pkt.ack("auth.status.ack", ch, p),
            Err(e) => pkt.ack_error("auth.status.ack", ch, &e, None),
        },
        "auth.cancel" => pkt.ack("auth.cancel.ack", ch, hub.auth_cancel(channel, &payload)),
        "auth.logout" => match hub.logout(channel).await {
            Ok(p) => {
                // Observations name elements of the released phone: nothing may act on them any more.
                crate::tools::observe::forget_channel(channel);
                pkt.ack("auth.logout.ack", ch, p)
            }
            Err(e) => pkt.ack_error("auth.logout.ack", ch, &e, None),
        },
        _ => unreachable!("routed by on_text"),
    };
    session.send(reply).await
}
