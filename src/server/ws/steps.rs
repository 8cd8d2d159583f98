//! What `tool.invoke` does with a call once it ran — its audit record or count ([`record`]) — and the steps of
//! `android_batch` (issue 49 item 5), which go through the same path: [`Runner`] is the [`Steps`] the batch gets in
//! its `ToolCall`. A step is looked up and validated by the registry exactly as a call is, the phone's state and the
//! operator's hold are checked as `tool.rs` checks them, the step runs under its own deadline (with `settle: false`:
//! the batch settles once) and is audited as an action of its own. The batch's cancellation (its deadline, the
//! lease's cut, a takeover, the client's cancel) drops the step running: the rest never start.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::channels::Hub;
use crate::device::{DeviceKey, DeviceState};
use crate::idempotency::CallKey;
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::server::state::Mount;
use crate::tools::{BoxFuture, ProgressFn, Steps, ToolCall};

/// The phone's state as a call needs it: on the operator's allowlist, online and authorised.
pub(super) fn device_ready(hub: &Hub, binding: &DeviceKey) -> Result<(), ProtoError> {
    if !hub.device_allowed(binding) {
        return Err(ProtoError::new(
            ErrorCode::PermissionDenied,
            "the operator's allowlist no longer includes the bound device",
        ));
    }
    match hub.backend().info(binding).map(|d| d.state) {
        Some(DeviceState::Online) => Ok(()),
        Some(DeviceState::Unauthorized) => Err(ProtoError::new(
            ErrorCode::DeviceUnauthorized,
            "the bound device has not authorised this host: accept the USB debugging prompt on the phone",
        )),
        _ => Err(ProtoError::new(ErrorCode::DeviceOffline, "the bound device is offline or disconnected")),
    }
}

/// One call that ran, as it is written down.
pub(super) struct Ran<'a> {
    pub channel: &'a str,
    pub tool_id: &'static str,
    pub device: &'a DeviceKey,
    pub args: &'a Map<String, Value>,
    pub call_id: Option<&'a str>,
    /// Its idempotency record's key (a side effect with a `tool_call_id`).
    pub key: Option<&'a CallKey>,
    pub read_only: bool,
    /// A side effect that failed having sent the phone nothing that changes it.
    pub sent_nothing: bool,
    pub was_cut: bool,
}

/// Writes a call's outcome down (blocking: SQLite). A read-only call is counted in memory (`audit::reads`: it goes
/// into the chain as an aggregate record); a side effect's outcome and audit record commit together, and take the
/// pending read counts with them (chained before it: they happened first). A side effect that sent the phone nothing
/// is counted like a read (issue 36); a repeat of one of the channel's recent recorded actions, or a channel past its
/// budget of individual records, is counted (issue 48, `audit::budget`): no row of its own. Its idempotency record,
/// if it has a key, is written in every case.
pub(super) fn record(hub: &Hub, ran: Ran<'_>, done: &Result<Value, ProtoError>) {
    let outcome = done.as_ref().err().map_or("ok", |e| e.code.as_str());
    let outcome = if ran.was_cut { "cut" } else { outcome };
    if ran.read_only {
        hub.count_read(ran.channel, ran.tool_id, ran.device, outcome);
        return;
    }
    if ran.sent_nothing {
        hub.count_refused(ran.channel, ran.tool_id, ran.device, outcome);
        if let Some(k) = ran.key {
            hub.calls().finish_with(k, done, Vec::new());
        }
        return;
    }
    let Some(audit) = hub.side_effect_entry(ran.channel, ran.call_id, ran.tool_id, ran.device, ran.args, outcome)
    else {
        if let Some(k) = ran.key {
            hub.calls().finish_with(k, done, Vec::new());
        }
        return;
    };
    let reads = hub.take_reads();
    let kept = reads.clone();
    let mut writes = reads;
    writes.push(audit);
    let committed = match ran.key {
        Some(k) => hub.calls().finish_with(k, done, writes),
        None => match hub.store().commit_all(writes) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "could not append to the audit log");
                false
            }
        },
    };
    if !committed {
        hub.restore_reads(kept);
    }
}

/// The steps of one `android_batch` call: its channel, phone and call identity.
pub(super) struct Runner {
    pub hub: Arc<Hub>,
    pub channel: String,
    pub binding: DeviceKey,
    pub wall: Arc<dyn Mount>,
    pub metrics: Arc<crate::metrics::Metrics>,
    pub progress: ProgressFn,
    /// The batch's `tool_call_id`: each step's audit record carries it (the steps have none of their own).
    pub call_id: Option<String>,
}

fn waits_for_person(tool_id: &str) -> ProtoError {
    ProtoError::new(
        ErrorCode::InvalidArguments,
        format!("{tool_id} waits for a person and cannot be a step of a batch; call it on its own"),
    )
}

/// A step's arguments as a call of its own carries them: with the batch's channel (the served schema requires it;
/// the batch refuses a step naming one).
fn on_channel(arguments: &Value, channel: &str) -> Value {
    let mut a = arguments.clone();
    if let Value::Object(m) = &mut a {
        m.insert("connector_channel_id".to_owned(), Value::String(channel.to_owned()));
    }
    a
}

impl Steps for Runner {
    fn check(&self, tool_id: &str, arguments: &Value) -> Result<(), ProtoError> {
        let (tool, _, _) = self.hub.registry().prepare(tool_id, &on_channel(arguments, &self.channel))?;
        if tool.waits_for_operator() {
            return Err(waits_for_person(tool_id));
        }
        Ok(())
    }

    fn run(&self, tool_id: &str, arguments: Value) -> BoxFuture<Result<Value, ProtoError>> {
        let (hub, channel, binding) = (self.hub.clone(), self.channel.clone(), self.binding.clone());
        let (wall, metrics, progress, call_id) =
            (self.wall.clone(), self.metrics.clone(), self.progress.clone(), self.call_id.clone());
        let tool_id = tool_id.to_owned();
        Box::pin(async move {
            let started = std::time::Instant::now();
            let (tool, args, settle) = hub.registry().prepare(&tool_id, &on_channel(&arguments, &channel))?;
            if tool.waits_for_operator() {
                return Err(waits_for_person(&tool_id));
            }
            device_ready(&hub, &binding)?;
            let spec = tool.spec().clone();
            if spec.side_effect {
                // An operator holding the phone: the batch's own call is stopped by the hold's token; this says why
                // should the step get here first.
                hub.operator_gate(&binding)?;
            }
            // The batch settles once, after its last step.
            let settle = settle.map(|s| crate::tools::settle::SettleArgs { settle: false, ..s });
            let deadline = hub.registry().call_deadline(&spec, settle);
            let call = ToolCall {
                channel_id: channel.clone(),
                binding: Some(binding.clone()),
                args: args.clone(),
                tool_call_id: None,
                progress,
                settle,
                deadline,
                steps: None,
            };
            let _agent = wall.agent_call(&channel, &binding, spec.id);
            let effects_before = hub.backend().side_effects_started(&binding);
            let r = match tokio::time::timeout(deadline, tool.call(call)).await {
                Ok(r) => r,
                Err(_) => {
                    hub.backend().command_timed_out(&binding);
                    Err(ProtoError::new(
                        ErrorCode::DeviceTimeout,
                        format!("{} did not finish within its {} ms deadline", spec.id, deadline.as_millis()),
                    ))
                }
            };
            let effects_after = hub.backend().side_effects_started(&binding);
            let sent_nothing = spec.side_effect
                && r.is_err()
                && matches!((effects_before, effects_after), (Some(a), Some(b)) if a == b);
            let read_only = !spec.side_effect;
            if read_only {
                let outcome = r.as_ref().err().map_or("ok", |e| e.code.as_str());
                wall.read_call(&channel, &binding, spec.id, crate::audit::redact(&args), outcome);
            }
            let done = r.clone();
            let writer = hub.clone();
            let _ = tokio::task::spawn_blocking(move || {
                let ran = Ran {
                    channel: &channel,
                    tool_id: spec.id,
                    device: &binding,
                    args: &args,
                    call_id: call_id.as_deref(),
                    key: None,
                    read_only,
                    sent_nothing,
                    was_cut: false,
                };
                record(&writer, ran, &done);
            })
            .await;
            let code = r.as_ref().err().map_or("ok", |e| e.code.as_str());
            metrics.tool_finished(tool.spec().id, code, started.elapsed());
            r
        })
    }
}
