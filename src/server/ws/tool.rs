//! `tool.invoke` (protocol §8.18/§8.19): route by the envelope channel only, check the binding and the device,
//! validate arguments against the tool's served schema, run the tool under its deadline, ack.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::fields::{log_str, str_field};
use super::session::Session;
use super::slots::MAX_CONCURRENT_PER_CHANNEL;
use super::steps::{device_ready, record, Ran, Runner};
use crate::channels::tickets::{closed_error, cut_error};
use crate::idempotency::{args_digest, Begin, CallKey, Calls};
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::packet::obj;
use crate::protocol::Packet;
use crate::server::log_gate::LogGate;
use crate::tools::{ProgressFn, ToolCall};

const ACK: &str = "tool.invoke.ack";

/// How much longer than the tool's own deadline a repeated call waits for the first one's outcome.
const WAIT_SLACK: std::time::Duration = std::time::Duration::from_secs(5);

/// The keys of a `tool.invoke` payload (§8.18: `tool_id`, `arguments`, `context`).
const PAYLOAD_KEYS: &[&str] = &["tool_id", "arguments", "context"];

/// Keys that belong in `payload.context` (§8.18: "context": {"session_id", "tool_call_id"}).
const CONTEXT_KEYS: &[&str] = &["session_id", "tool_call_id"];

/// Refuses a payload whose shape is not §8.18's, naming the right place. §8.18 defines the payload as
/// `{tool_id, arguments, context: {session_id, tool_call_id}}` and nothing else; a key we do not know is refused
/// rather than ignored, because ignoring one silently dropped a misplaced `tool_call_id` and a side effect ran twice
/// on a retry. Keys inside `context` other than `tool_call_id` are left alone: context is xAgent's runtime
/// correlation data ("Connector 只能作为关联信息使用") and may grow.
fn check_payload_shape(payload: &Map<String, Value>) -> Result<(), ProtoError> {
    let bad = |m: String| Err(ProtoError::new(ErrorCode::InvalidPacket, m));
    if let Some(k) = payload.keys().find(|k| !PAYLOAD_KEYS.contains(&k.as_str())) {
        let k = log_str(k);
        return if CONTEXT_KEYS.contains(&k.as_str()) {
            bad(format!(
                "`{k}` belongs in payload.context.{k} (protocol §8.18), not at the payload's top level; nothing ran"
            ))
        } else {
            bad(format!(
                "tool.invoke payload key \"{k}\" is unknown (protocol §8.18: {}; the call identity goes in \
                 payload.context.tool_call_id, tool arguments in payload.arguments); nothing ran",
                PAYLOAD_KEYS.join(", ")
            ))
        };
    }
    match payload.get("context") {
        None | Some(Value::Null) => {}
        Some(Value::Object(c)) => match c.get("tool_call_id") {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(_) => {
                return bad("payload.context.tool_call_id must be a non-empty string; nothing ran".into());
            }
        },
        Some(_) => return bad("tool.invoke payload.context must be an object; nothing ran".into()),
    }
    Ok(())
}

/// The answer of a call an operator's takeover stopped: nothing it read is returned (it may be the operator's
/// screen or typed text), and whether its input may have reached the phone (`device::sent`).
fn taken_over(sent: &crate::device::sent::Sent) -> ProtoError {
    let what = sent.what_reached_the_phone();
    let sent = sent.may_have_been_sent();
    ProtoError::new(
        ErrorCode::OperatorControl,
        format!(
            "an operator took this phone over from the device wall while the call was running; the call was \
             stopped and {what} (input_may_have_been_sent: {sent}); nothing it read is returned. Retry after the \
             operator returns the phone, or bind another phone"
        ),
    )
    .with_details(json!({"input_may_have_been_sent": sent}))
}

/// A `connector_channel_id` in the arguments that is not the envelope's: refused, naming both. Routing uses the
/// envelope only (§8.18: "xAgent 当前不使用模型参数中的 connector_channel_id 选择或覆盖 Channel；实际路由只认 envelope
/// 顶层字段" — the model's argument neither selects nor overrides the channel), so a differing one means the model
/// meant another channel than the one the call would act on: acting would be a silent misplacement (issue 35).
fn check_argument_channel(arguments: &Value, channel: &str) -> Result<(), ProtoError> {
    match arguments.get("connector_channel_id").and_then(Value::as_str) {
        Some(given) if given != channel => Err(ProtoError::new(
            ErrorCode::InvalidArguments,
            format!(
                "argument `connector_channel_id` is \"{}\" but this call came on channel {channel:?} (the packet's \
                 envelope, which alone routes a call: protocol §8.18); nothing ran. Pass the channel's own id",
                log_str(given)
            ),
        )),
        _ => Ok(()),
    }
}

/// The outcome recorded for a repeated `tool_call_id`, marked as such: `replayed: true` in a result object, in an
/// error's `details` and its message — the agent learns its repeat did not act again.
fn replayed(o: Result<Value, ProtoError>) -> Result<Value, ProtoError> {
    match o {
        Ok(Value::Object(mut m)) => {
            m.insert("replayed".into(), json!(true));
            Ok(Value::Object(m))
        }
        Ok(other) => Ok(other),
        Err(mut e) => {
            match e.details.as_mut() {
                Some(Value::Object(d)) => {
                    d.insert("replayed".into(), json!(true));
                }
                _ => e.details = Some(json!({"replayed": true})),
            }
            e.message.push_str(" (replayed: the recorded outcome of this tool_call_id; nothing ran again)");
            Err(e)
        }
    }
}

pub async fn invoke(session: &mut Session, pkt: Packet) {
    // Taken first, so it never outlives the packet it was set for (see `Session::request_cancel`).
    let request_cancel = session.request_cancel.take().unwrap_or_default();
    let hub = session.app.hub.clone();
    // Routing errors are `type = "error"` (§7); everything after routing is a business failure on the ack.
    let channel = match hub.check_channel(session.socket, pkt.connector_channel_id.as_deref()) {
        Ok(c) => c,
        Err(e) => return session.send_error(&pkt, e).await,
    };
    let payload = pkt.payload();
    let tool_id = str_field(&payload, "tool_id").unwrap_or("").to_owned();
    let metrics = session.app.metrics.clone();
    let fail = |e: ProtoError| {
        // Refusals can come in floods: one line per second, client strings escaped and cut.
        static GATE: LogGate = LogGate::new();
        if let Some(suppressed) = GATE.allow() {
            let tool = log_str(&tool_id);
            tracing::info!(%tool, code = e.code.as_str(), suppressed, "tool.invoke refused");
        }
        // Label values are bounded: unknown tool ids are counted under one name.
        let label = if hub.registry().spec(&tool_id).is_some() { tool_id.as_str() } else { "unknown" };
        metrics.tool_refused(label, e.code.as_str());
        pkt.ack_error(ACK, Some(&channel), &e, Some(obj([("tool_id", json!(tool_id))])))
    };
    // Checked before anything else: a misplaced key (e.g. `tool_call_id` beside `tool_id`) would otherwise be
    // dropped silently and the call run without the identity that makes a retry safe.
    if let Err(e) = check_payload_shape(&payload) {
        return session.send(fail(e)).await;
    }
    if *session.app.shutdown.borrow() {
        return session
            .send(fail(ProtoError::new(
                ErrorCode::ShuttingDown,
                "the connector is shutting down; retry after it restarts",
            )))
            .await;
    }
    let arguments = payload.get("arguments").cloned().unwrap_or_else(|| Value::Object(Map::new()));
    if let Err(e) = check_argument_channel(&arguments, &channel) {
        return session.send(fail(e)).await;
    }
    let (tool, args, settle) = match hub.registry().prepare(&tool_id, &arguments) {
        Ok(x) => x,
        Err(e) => return session.send(fail(e)).await,
    };
    let Some(binding) = hub.binding(&channel) else {
        let e = ProtoError::new(
            ErrorCode::ConnectionNotAuthenticated,
            "no device is bound to this channel; complete auth flow adb_device first",
        );
        return session.send(fail(e)).await;
    };
    if let Err(e) = device_ready(&hub, &binding) {
        return session.send(fail(e)).await;
    }
    // An operator holds the phone (device wall takeover): the agent's call touches nothing. Otherwise the call
    // runs under the phone's hold token: a takeover from now on stops it (see the `select!` below).
    let hold = match hub.operator_gate(&binding) {
        // A call waiting for a person waits for exactly this takeover: it runs under a token nothing cancels.
        Ok(_) if tool.waits_for_operator() => tokio_util::sync::CancellationToken::new(),
        Ok(t) => t,
        // A read-only call made during a hold is the agent looking while the person acts (issue 35 item 5): it runs,
        // and nothing ends it. Inputs stay refused; and a call already on its way when a hold begins is still
        // stopped by it (the token above, issue 36): it did not ask to read what the operator then did.
        Err(e) if !tool.spec().side_effect && e.code == ErrorCode::OperatorControl => {
            tokio_util::sync::CancellationToken::new()
        }
        Err(e) => return session.send(fail(e)).await,
    };
    // The call's place in the channel's work under this binding: every end of the binding cuts it before the
    // phone is given back (`channels::work`).
    let ticket = match hub.lease_ticket(&channel, &binding) {
        Ok(t) => t,
        Err(e) => return session.send(fail(e)).await,
    };
    let waits_for_operator = tool.waits_for_operator();
    let mut spec = tool.spec().clone();
    spec.deadline = hub.registry().call_deadline(&spec, settle);
    let context = payload.get("context").and_then(Value::as_object);
    let tool_call_id = context.and_then(|c| str_field(c, "tool_call_id")).map(str::to_owned);

    let tx = session.tx.clone();
    let progress_channel = channel.clone();
    let progress_tool = tool_id.clone();
    let progress_metrics = session.app.metrics.clone();
    let progress_of = pkt.packet_id.clone();
    let progress: ProgressFn = Arc::new(move |message: &str, fraction: Option<f64>| {
        let mut p = obj([("tool_id", json!(progress_tool)), ("status", json!("running")), ("message", json!(message))]);
        if let Some(f) = fraction {
            p.insert("progress".into(), json!(f.clamp(0.0, 1.0)));
        }
        // Progress is advisory (§8.20): under backpressure it is dropped, never the ack.
        // `reply_to` names the call's request packet (§7's rule for acks): with several calls running on a channel,
        // it says whose progress this is (the MCP endpoint routes each to its own request's stream by it).
        let mut push = Packet::push("tool.progress.push", Some(&progress_channel), p);
        push.reply_to = Some(progress_of.clone());
        if tx.try_send(push).is_err() {
            progress_metrics.progress_dropped.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
    });
    // Repeated-call semantics (see crate::idempotency): only side effects with a tool_call_id are recorded.
    let key = tool_call_id.clone().filter(|_| spec.side_effect).map(|call_id| CallKey {
        channel: channel.clone(),
        tool: tool_id.clone(),
        call_id,
    });
    // Bounded concurrency per channel (across sockets): a runaway agent cannot queue unbounded work on one phone.
    // The slot is taken before the idempotency record is begun, so a refused call leaves no record behind.
    let Some(slot) = session.channel_slot(&channel) else {
        let e = ProtoError::new(
            ErrorCode::RateLimited,
            format!("this channel already has {MAX_CONCURRENT_PER_CHANNEL} tool calls running; wait for their acks"),
        );
        return session.send(fail(e)).await;
    };
    // Tells the store's group commit that this call's writes are coming (it batches them with other calls').
    let activity = hub.store().call_activity();
    let begin = match &key {
        // SQLite work runs on a blocking thread, never on an async worker.
        Some(k) => {
            let (calls_hub, k, digest) = (hub.clone(), k.clone(), args_digest(&args));
            match tokio::task::spawn_blocking(move || calls_hub.calls().begin(&k, &digest)).await {
                Ok(Ok(b)) => b,
                Ok(Err(e)) => return session.send(fail(e)).await,
                Err(_) => {
                    let e = ProtoError::new(ErrorCode::Internal, "the idempotency check failed unexpectedly");
                    return session.send(fail(e)).await;
                }
            }
        }
        None => Begin::Run,
    };
    let audit_args = args.clone();
    let audit_call_id = tool_call_id.clone();
    let audit_device = binding.clone();
    // `android_batch` runs its steps through this same path (`steps.rs`), each audited as an action of its own.
    let steps = (tool_id == crate::tools::batch::ID).then(|| {
        Arc::new(Runner {
            hub: hub.clone(),
            channel: channel.clone(),
            binding: binding.clone(),
            wall: session.app.wall.clone(),
            metrics: session.app.metrics.clone(),
            progress: progress.clone(),
            call_id: tool_call_id.clone(),
        }) as Arc<dyn crate::tools::Steps>
    });
    let call = ToolCall {
        channel_id: channel.clone(),
        binding: Some(binding),
        args,
        tool_call_id,
        progress,
        settle,
        deadline: spec.deadline,
        steps,
    };
    let cancel = session.call_cancel(&channel);
    let shutdown = session.app.shutdown.clone();
    let guard = (session.in_flight.enter(), session.app.tools_in_flight.enter());
    let tx = session.tx.clone();
    let wall = session.app.wall.clone();
    let span = tracing::info_span!("tool", tool = %tool_id, channel = %channel);
    tokio::spawn(tracing::Instrument::instrument(
        async move {
            let started = std::time::Instant::now();
            // Set when the call ran but sent the phone nothing (see below): its log line is rate-limited too.
            let mut refused = false;
            let result = match begin {
                Begin::Replay(o) => {
                    drop(activity);
                    tracing::info!("repeated tool_call_id: answering with the recorded outcome");
                    replayed(o)
                }
                Begin::Wait(rx) => {
                    drop(activity);
                    tracing::info!("repeated tool_call_id while running: waiting for the first call");
                    replayed(Calls::wait(rx, spec.deadline + WAIT_SLACK).await)
                }
                Begin::Run => {
                    // Lets the device wall's thumbnails step aside and records the call's duration.
                    let _agent = wall.agent_call(&channel, &audit_device, spec.id);
                    let effects_before = hub.backend().side_effects_started(&audit_device);
                    // Deadline, cancellation or takeover: either way the tool's future is dropped here, which
                    // closes its adb connection, hangs up the device command and leaves the phone's order queue.
                    // `biased`: a takeover is seen before the tool is polled again, so a call queued for the order
                    // slot never sends its input once the operator holds the phone.
                    let (sent, work) = crate::device::sent::track(tool.call(call));
                    ticket.watch(&sent);
                    // Set when the binding's end, or its channel's route closing, cut the call: answered and audited
                    // as `cut`.
                    let mut was_cut = false;
                    let r = tokio::select! {
                        biased;
                        _ = hold.cancelled() => Err(taken_over(&sent)),
                        _ = ticket.token().cancelled() => {
                            was_cut = true;
                            Err(cut_error(&ticket.cut().unwrap_or_default(), &sent))
                        }
                        _ = request_cancel.cancelled() => Err(ProtoError::new(
                            ErrorCode::ToolInvokeFailed,
                            "cancelled: the MCP client cancelled this request (notifications/cancelled, or it closed \
                             the connection) during the call; whether it took effect is unknown",
                        )),
                        _ = cancel.cancelled() => if *shutdown.borrow() {
                            Err(ProtoError::new(ErrorCode::ShuttingDown, "cancelled: the connector shut down during the call; whether it took effect is unknown"))
                        } else {
                            // The channel's route closed under its binding: the call is cut as every end of the
                            // binding cuts one (answered with `input_may_have_been_sent`, audited `cut`, counted
                            // in the `lease.end` that follows: issue 47).
                            was_cut = true;
                            ticket.closed();
                            Err(closed_error(&sent))
                        },
                        r = tokio::time::timeout(spec.deadline, work) => match r {
                            Ok(r) => r,
                            Err(_) => {
                                // The device layer's op was dropped before it could count this: the recovery
                                // ladder counts timeouts in a row per phone (`device::recovery`).
                                hub.backend().command_timed_out(&audit_device);
                                Err(ProtoError::new(
                                    ErrorCode::DeviceTimeout,
                                    format!("{} did not finish within its {} ms deadline", spec.id, spec.deadline.as_millis()),
                                ))
                            }
                        },
                    };
                    // A call that ended as the operator took over may carry what it read after: never answered.
                    let r = if hold.is_cancelled() && !was_cut { Err(taken_over(&sent)) } else { r };
                    // Dropped by its channel's close or its client, having sent input: what the phone may still
                    // play (a helper gesture) is stopped when the binding ends (`channels::work`, issue 47).
                    if !was_cut && (cancel.is_cancelled() || request_cancel.is_cancelled()) {
                        ticket.stopped(&sent);
                    }
                    // Only calls that ran are device actions; replays and waits are not audited again. A read-only
                    // call is counted in memory (`audit::reads`: it writes nothing now, and goes into the chain as
                    // an aggregate record); a side effect's outcome and audit record commit together, and take the
                    // pending read counts with them (chained before it: they happened first). SQLite work runs on a
                    // blocking thread.
                    // A side effect that failed having sent the phone nothing that changes it (its own checks
                    // refused it: a bad file_ref, a point off the screen) is no device action either: it is
                    // counted like a read (issue 36: a flood of them wrote a record each and pushed real actions
                    // out of the retention window). Its idempotency record, if it has a key, is still written.
                    let effects_after = hub.backend().side_effects_started(&audit_device);
                    let sent_nothing = spec.side_effect
                        && !waits_for_operator
                        && r.is_err()
                        && matches!((effects_before, effects_after), (Some(a), Some(b)) if a == b);
                    refused = sent_nothing;
                    let (hub, key, done, channel) = (hub.clone(), key.clone(), r.clone(), channel.clone());
                    let read_only = !spec.side_effect;
                    if read_only {
                        let outcome = r.as_ref().err().map_or("ok", |e| e.code.as_str());
                        wall.read_call(&channel, &audit_device, spec.id, crate::audit::redact(&audit_args), outcome);
                    }
                    let _ = tokio::task::spawn_blocking(move || {
                        let ran = Ran {
                            channel: &channel,
                            tool_id: spec.id,
                            device: &audit_device,
                            args: &audit_args,
                            call_id: audit_call_id.as_deref(),
                            key: key.as_ref(),
                            read_only,
                            sent_nothing,
                            was_cut,
                        };
                        record(&hub, ran, &done);
                    })
                    .await;
                    drop(activity);
                    // Answered and audited: the binding's end may give the phone back now.
                    drop(ticket);
                    r
                }
            };
            let ms = started.elapsed().as_millis() as u64;
            let code = result.as_ref().err().map_or("ok", |e| e.code.as_str());
            metrics.tool_finished(spec.id, code, started.elapsed());
            if let Ok(Value::Object(r)) = &result {
                let bytes: u64 = r
                    .get("files")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f.get("byte_size").and_then(Value::as_u64))
                    .sum();
                if bytes > 0 {
                    metrics.files_produced(spec.id, bytes);
                }
            }
            let reply = match result {
                Ok(result) => {
                    tracing::info!(ms, "tool ok");
                    pkt.ack(ACK, Some(&channel), obj([("tool_id", json!(spec.id)), ("result", result)]))
                }
                Err(e) if refused => {
                    // One line per second at most: such failures can come at thousands a second.
                    static GATE: LogGate = LogGate::new();
                    if let Some(suppressed) = GATE.allow() {
                        tracing::info!(ms, code = e.code.as_str(), suppressed, "tool failed before any device action");
                    }
                    pkt.ack_error(ACK, Some(&channel), &e, Some(obj([("tool_id", json!(spec.id))])))
                }
                Err(e) => {
                    tracing::info!(ms, code = e.code.as_str(), "tool failed");
                    pkt.ack_error(ACK, Some(&channel), &e, Some(obj([("tool_id", json!(spec.id))])))
                }
            };
            let _ = tx.send(reply).await;
            drop((guard, slot));
        },
        span,
    ));
}
