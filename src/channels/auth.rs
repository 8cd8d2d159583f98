//! Device binding as the card's auth flow (`auth.start|status|cancel|logout`, protocol §8.7–§8.14).
//!
//! `auth.start` binds at once when the device is online (`authenticated`, with a `connected` descriptor). A device
//! that has not yet accepted this host's RSA key gives a `pending` session: the person accepts the USB debugging
//! prompt on the phone, and `auth.status` binds as soon as the adb server reports the device online. Everything
//! else fails with a reason and a stable code. Sessions are persisted so `auth.status`/`auth.cancel` answer
//! consistently across restarts.

use serde_json::{json, Map, Value};

use super::hub::{internal, mask_serial, to_value, Hub};
use super::matching::{self, Constraints};
use crate::device::{DeviceKey, DeviceState};
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::{ids, now_ms};
use crate::store::AuthRow;

/// The keys of an `auth.start` payload (§8.7).
const AUTH_START_KEYS: &[&str] = &["flow_id", "input"];

/// `device_busy` for a phone another channel holds, with what the caller can do about it.
const HELD_ELSEWHERE: &str = "the device is bound to another channel; bind another phone (auth.start without \
                              `serial` takes any free one) or ask an operator to release it (Release on the device \
                              wall, or auth.logout by the channel holding it)";

/// `operator_control` for a named phone an operator has taken over from the device wall.
const OPERATOR_HOLDS: &str = "an operator is using this phone from the device wall (takeover); nothing was bound. \
                              Bind another phone (auth.start without `serial` takes any free one) or try again in a \
                              minute or two, when the operator has returned it";

/// `device_busy` for a phone whose last lease's settings are not restored yet (`device::conditions`).
const NOT_RESTORED: &str = "the phone is not handed to an agent until the settings its last lease changed are \
                            restored (the connector retries while it is online)";

/// How long a pending session waits for approval; finished sessions stay queryable an hour beyond this
/// (`Hub::run_leases` prunes them).
const SESSION_TTL_MS: u64 = 10 * 60 * 1000;
/// Suggested `auth.status` polling interval while pending.
const POLL_INTERVAL_MS: u64 = 2000;

/// The result of an auth packet: an ack payload, and an error to put beside it when the operation failed.
pub struct AuthOutcome {
    pub payload: Map<String, Value>,
    pub error: Option<ProtoError>,
}

/// Serials are printable ASCII without spaces or shell metacharacters (USB serials, `host:port`, mDNS names).
/// Longest an `auth.start` waits for a device that is still being verified (see [`Hub::auth_start_settled`]).
pub const SETTLE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

fn valid_serial(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-[]%".contains(&b))
}

/// What `pick_device` found.
enum Pick {
    Online(DeviceKey),
    /// Present, free and allowed, but waiting for the person to accept the RSA prompt.
    NeedsApproval(DeviceKey),
}

const APPROVE_MESSAGE: &str =
    "Unlock the phone and accept the \"Allow USB debugging?\" prompt for this computer; then poll auth.status";

impl Hub {
    fn flow_known(&self, flow_id: &str) -> bool {
        self.card.auth_flows.iter().any(|f| f.id == flow_id)
    }

    fn auth_payload(&self, channel_id: &str, row: &AuthRow, status: &str) -> Map<String, Value> {
        let mut p = Map::new();
        p.insert("connector_channel_id".into(), json!(channel_id));
        p.insert("flow_id".into(), json!(row.flow_id));
        p.insert("auth_session_id".into(), json!(row.auth_session_id));
        p.insert("status".into(), json!(status));
        p.insert("message".into(), json!(row.message));
        p.insert("expires_at".into(), json!(row.expires_ms));
        match status {
            "pending" => {
                p.insert("poll_interval_millis".into(), json!(POLL_INTERVAL_MS));
            }
            "authenticated" => {
                p.insert("connection_descriptor".into(), to_value(&self.descriptor(channel_id)));
            }
            _ => {}
        }
        p
    }

    fn save_session(&self, row: &AuthRow) -> Result<(), ProtoError> {
        self.store.put_auth_session(row, now_ms()).map_err(internal)
    }

    /// [`Hub::auth_start`], but while the device list is still settling (right after start-up, or a device being
    /// verified) a request that found no online device waits for it, up to [`SETTLE_WAIT`], instead of answering
    /// `device_offline` / `device_not_found` for a phone that is about to be usable.
    pub async fn auth_start_settled(&self, channel_id: &str, payload: &Map<String, Value>) -> AuthOutcome {
        let deadline = tokio::time::Instant::now() + SETTLE_WAIT;
        let mut changes = self.backend.subscribe();
        loop {
            let out = self.auth_start(channel_id, payload);
            let code = out.error.as_ref().map(|e| e.code);
            let waiting = matches!(code, Some(ErrorCode::DeviceOffline | ErrorCode::DeviceNotFound));
            if !waiting || !self.backend.settling() || tokio::time::Instant::now() >= deadline {
                return self.lease_ready(channel_id, out).await;
            }
            let poll = (tokio::time::Instant::now() + std::time::Duration::from_millis(100)).min(deadline);
            tokio::select! {
                _ = changes.recv() => {}
                _ = tokio::time::sleep_until(poll) => {}
            }
        }
    }

    /// The one step between a bind and its answer to the agent: the phone is made ready for the lease (the
    /// policy's lease conditions, `device::conditions`) before the agent hears `authenticated`, so its first call
    /// sees the clean phone. A phone that cannot be made ready is unbound again (its release puts back whatever
    /// was set) and the answer fails with the reason. Every path that answers a bind goes through here
    /// ([`Hub::auth_start_settled`], [`Hub::auth_status_ready`]).
    pub async fn lease_ready(&self, channel_id: &str, mut out: AuthOutcome) -> AuthOutcome {
        let authenticated =
            out.error.is_none() && out.payload.get("status").and_then(Value::as_str) == Some("authenticated");
        let Some(key) = self.binding(channel_id).filter(|_| authenticated) else { return out };
        let Err(e) = self.backend.clone().prepare(key.clone()).await else {
            // The bind is audited once the phone is ready: who holds it from now on (issue 47).
            // The next tenant is told what it got (issue 47): what the last release put back, what it could not.
            let mut args = Map::from_iter([("flow_id".to_owned(), json!("adb_device"))]);
            if let Some((reset, not_reset)) = self.backend.lease_report(&key) {
                let lease = json!({"reset": reset, "not_reset": not_reset});
                args.insert("lease".into(), lease.clone());
                out.payload.insert("lease".into(), lease);
            }
            self.audit(channel_id, None, "lease.bind", &key, &args, "ok");
            return out;
        };
        tracing::warn!(channel = %channel_id, device = %key, error = %e.message, "bound phone not ready; unbound");
        if let Err(le) = self.auth_logout(channel_id) {
            tracing::error!(channel = %channel_id, error = %le.message, "could not unbind the phone that was not ready");
        }
        out.payload.insert("status".into(), json!("failed"));
        out.payload.insert("message".into(), json!(e.message));
        out.payload.remove("connection_descriptor");
        out.payload.remove("auth_session_id");
        out.payload.remove("expires_at");
        out.error = Some(e);
        out
    }

    /// [`Hub::auth_status`], with a bind it completes made ready first ([`Hub::lease_ready`]).
    pub async fn auth_status_ready(
        &self,
        channel_id: &str,
        payload: &Map<String, Value>,
    ) -> Result<Map<String, Value>, ProtoError> {
        let p = self.auth_status(channel_id, payload)?;
        let out = self.lease_ready(channel_id, AuthOutcome { payload: p, error: None }).await;
        match out.error {
            None => Ok(out.payload),
            Some(e) => Err(e),
        }
    }

    /// `auth.start`: bind the requested device, or any free online one (pool semantics).
    pub fn auth_start(&self, channel_id: &str, payload: &Map<String, Value>) -> AuthOutcome {
        let flow_id = payload.get("flow_id").and_then(Value::as_str).unwrap_or("").to_owned();
        let fail = |code: ErrorCode, msg: String| {
            let mut p = Map::new();
            p.insert("connector_channel_id".into(), json!(channel_id));
            p.insert("flow_id".into(), json!(flow_id));
            p.insert("status".into(), json!("failed"));
            p.insert("message".into(), json!(msg));
            AuthOutcome { payload: p, error: Some(ProtoError::new(code, msg)) }
        };
        // §8.7 defines the payload as `{flow_id, input}`. Any other key is refused, never ignored: `{"fields":
        // {"serial": …}}` used to bind whichever phone was free instead of the one asked for.
        if let Some(k) = payload.keys().find(|k| !AUTH_START_KEYS.contains(&k.as_str())) {
            // A client string in an error: control characters escaped, cut (it may be long).
            let k: String = k.chars().take(64).flat_map(char::escape_debug).collect();
            let known = || matching::CONSTRAINT_FIELDS.join(", ");
            return fail(
                ErrorCode::InvalidPacket,
                if k == "serial" || matching::CONSTRAINT_FIELDS.contains(&k.as_str()) {
                    format!("`{k}` belongs in payload.input.{k} (protocol §8.7), not at the payload's top level")
                } else {
                    format!(
                        "auth.start payload key \"{k}\" is unknown (protocol §8.7: flow_id, input); the device \
                         is chosen by payload.input (serial, {})",
                        known()
                    )
                },
            );
        }
        if !self.flow_known(&flow_id) {
            let known: Vec<&str> = self.card.auth_flows.iter().map(|f| f.id).collect();
            return fail(
                ErrorCode::AuthFlowNotFound,
                if known.is_empty() {
                    format!("auth flow {flow_id:?} is not offered: this connector runs without a device backend")
                } else {
                    format!("auth flow {flow_id:?} is not in the card (offered: {})", known.join(", "))
                },
            );
        }
        let input = match payload.get("input") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => return fail(ErrorCode::AuthInputInvalid, "auth.start input must be an object".into()),
        };
        if let Some(k) = input.keys().find(|k| {
            !["serial", "conditions"].contains(&k.as_str()) && !matching::CONSTRAINT_FIELDS.contains(&k.as_str())
        }) {
            return fail(
                ErrorCode::AuthInputInvalid,
                format!(
                    "auth.start input field {k:?} is unknown (known: serial, {}, conditions)",
                    matching::CONSTRAINT_FIELDS.join(", ")
                ),
            );
        }
        // The lease conditions the agent asks for, checked against the policy before anything is bound.
        let asked = input.get("conditions").filter(|v| !v.is_null());
        if let Err(msg) = self.backend.ask_conditions(None, asked) {
            return fail(ErrorCode::AuthInputInvalid, msg);
        }
        let constraints = match Constraints::from_input(&input) {
            Ok(c) => c,
            Err(e) => return fail(e.code, e.message),
        };
        let serial = match input.get("serial") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => None,
            Some(Value::String(s)) if valid_serial(s.trim()) => Some(s.trim().to_owned()),
            Some(_) => {
                return fail(
                    ErrorCode::AuthInputInvalid,
                    "serial must be a device serial as `adb devices` prints it".into(),
                )
            }
        };

        // "如果该 channel 已有可复用登录态，Connector 可以直接返回 authenticated 和 connection_descriptor."
        let mut rebind = false;
        let pick = match self.binding(channel_id) {
            Some(k) if !self.device_allowed(&k) => {
                return fail(
                    ErrorCode::PermissionDenied,
                    "the operator's allowlist no longer includes the device bound to this channel; auth.logout it"
                        .into(),
                )
            }
            // Already bound: the lease (and the conditions it began with) continues.
            Some(k) if serial.as_deref().is_none_or(|s| s == k.serial) => {
                rebind = true;
                Pick::Online(k)
            }
            Some(k) => {
                return fail(
                    ErrorCode::DeviceBusy,
                    format!(
                        "this channel is already bound to another device ({}); auth.logout this channel first, \
                         or open another channel to bind a second phone",
                        mask_serial(&k.serial)
                    ),
                )
            }
            None if serial.is_some() && !constraints.is_empty() => {
                return fail(
                    ErrorCode::AuthInputInvalid,
                    format!(
                        "give either `serial` or device constraints ({}), not both",
                        matching::CONSTRAINT_FIELDS.join(", ")
                    ),
                )
            }
            None => match self.pick_device(serial.as_deref(), &constraints) {
                Ok(p) => p,
                Err(e) => return fail(e.code, e.message),
            },
        };
        let mut row = AuthRow {
            auth_session_id: ids::auth_session_id(),
            channel_id: channel_id.to_owned(),
            flow_id: flow_id.clone(),
            status: String::new(),
            message: String::new(),
            expires_ms: now_ms() + SESSION_TTL_MS,
            device: None,
        };
        if !rebind {
            let key = match &pick {
                Pick::Online(k) | Pick::NeedsApproval(k) => k,
            };
            // The new lease's conditions: what was asked (checked above), or the policy's alone.
            if let Err(msg) = self.backend.ask_conditions(Some(key), asked) {
                return fail(ErrorCode::AuthInputInvalid, msg);
            }
        }
        match pick {
            Pick::Online(key) => {
                if let Err(e) = self.bind(channel_id, &key) {
                    return fail(e.code, e.message);
                }
                row.status = "authenticated".into();
                row.message = "device bound".into();
                tracing::info!(channel = %channel_id, device = %key, "device bound");
            }
            Pick::NeedsApproval(key) => {
                row.status = "pending".into();
                row.message = APPROVE_MESSAGE.into();
                row.device = Some((key.server.clone(), key.serial.clone()));
                self.set_pending(channel_id, Some(row.auth_session_id.clone()));
                tracing::info!(channel = %channel_id, device = %key, "binding waits for the USB debugging prompt");
            }
        }
        if let Err(e) = self.save_session(&row) {
            return fail(e.code, e.message);
        }
        AuthOutcome { payload: self.auth_payload(channel_id, &row, &row.status.clone()), error: None }
    }

    fn set_pending(&self, channel_id: &str, session: Option<String>) {
        if let Some(ch) = self.lock().channels.get_mut(channel_id) {
            ch.pending_auth = session;
        }
        self.push_descriptor(channel_id);
    }

    /// Chooses a device: the named serial, or the first online allowed device no channel holds, or failing that
    /// the first free allowed device that awaits the person's approval.
    fn pick_device(&self, serial: Option<&str>, constraints: &Constraints) -> Result<Pick, ProtoError> {
        let allowed = |s: &str| self.cfg.allow_serials.is_empty() || self.cfg.allow_serials.iter().any(|a| a == s);
        let held = matching::Held {
            channels: self.lock().channels.values().filter_map(|c| c.binding.clone()).collect(),
            operator: self.taken_over(),
        };
        let devices = self.backend.devices();
        match serial {
            Some(s) => {
                // A second path to a phone (its Wi-Fi serial while it is listed by USB) is that phone.
                let alias = self.backend.resolve_serial(s);
                if !allowed(s) && !alias.as_ref().is_some_and(|k| self.device_allowed(k)) {
                    return Err(ProtoError::new(
                        ErrorCode::PermissionDenied,
                        "the operator's allowlist (--allow-serial) does not include this device",
                    ));
                }
                let d =
                    devices.iter().find(|d| d.key.serial == s || alias.as_ref() == Some(&d.key)).ok_or_else(|| {
                        ProtoError::new(
                            ErrorCode::DeviceNotFound,
                            "no adb server lists a device with this serial (see `adb devices`)",
                        )
                    })?;
                if held.channels.contains(&d.key) {
                    return Err(ProtoError::new(ErrorCode::DeviceBusy, HELD_ELSEWHERE));
                }
                // Refused rather than bound: a binding the agent cannot use (every call `operator_control`) would
                // also keep the phone from the pool after the operator is done with it, for an agent that may be
                // gone. Nothing is bound; the agent binds again once the operator has returned the phone.
                if held.operator.contains(&d.key) {
                    return Err(ProtoError::new(ErrorCode::OperatorControl, OPERATOR_HOLDS));
                }
                if let Some(why) = self.backend.not_restored(&d.key) {
                    return Err(ProtoError::new(ErrorCode::DeviceBusy, format!("{NOT_RESTORED}: {why}")));
                }
                match d.state {
                    DeviceState::Online => Ok(Pick::Online(d.key.clone())),
                    DeviceState::Unauthorized => Ok(Pick::NeedsApproval(d.key.clone())),
                    _ => {
                        Err(ProtoError::new(ErrorCode::DeviceOffline, "the device is offline; reconnect it and retry"))
                    }
                }
            }
            None => {
                // A phone whose last lease's settings are not restored is passed over like a held one, and the
                // refusal says how many wait for that.
                let dirty: Vec<DeviceKey> = devices
                    .iter()
                    .filter(|d| self.backend.not_restored(&d.key).is_some())
                    .map(|d| d.key.clone())
                    .collect();
                let mut held = held;
                held.channels.extend(dirty.iter().cloned());
                match matching::choose(constraints, &devices, |k| self.device_allowed(k), &held, &self.cfg.labels) {
                    Ok(matching::Choice::Online(k)) => Ok(Pick::Online(k)),
                    Ok(matching::Choice::NeedsApproval(k)) => Ok(Pick::NeedsApproval(k)),
                    Err(mut e) if !dirty.is_empty() => {
                        e.message.push_str(&format!(" ({} of them: {NOT_RESTORED}, see /health)", dirty.len()));
                        Err(e)
                    }
                    Err(e) => Err(e),
                }
            }
        }
    }

    fn bind(&self, channel_id: &str, key: &DeviceKey) -> Result<(), ProtoError> {
        let mut inner = self.lock();
        if inner.channels.iter().any(|(id, c)| id != channel_id && c.binding.as_ref() == Some(key)) {
            return Err(ProtoError::new(ErrorCode::DeviceBusy, HELD_ELSEWHERE));
        }
        self.store.set_binding(channel_id, Some((&key.server, &key.serial)), now_ms()).map_err(internal)?;
        if let Some(ch) = inner.channels.get_mut(channel_id) {
            ch.binding = Some(key.clone());
            ch.pending_auth = None;
        }
        Ok(())
    }

    fn session_of(&self, channel_id: &str, payload: &Map<String, Value>) -> Result<AuthRow, ProtoError> {
        let id = payload.get("auth_session_id").and_then(Value::as_str).unwrap_or("");
        match self.store.auth_session(id).map_err(internal)? {
            Some(row) if row.channel_id == channel_id => Ok(row),
            _ => Err(ProtoError::new(
                ErrorCode::AuthSessionNotFound,
                format!("auth session {id:?} does not exist on this channel"),
            )),
        }
    }

    /// `auth.status` (§8.9/§8.10). A pending session re-checks its device and binds it once it is online.
    pub fn auth_status(
        &self,
        channel_id: &str,
        payload: &Map<String, Value>,
    ) -> Result<Map<String, Value>, ProtoError> {
        let mut row = self.session_of(channel_id, payload)?;
        if row.status == "pending" {
            self.advance_pending(channel_id, &mut row)?;
        }
        let bound = self.binding(channel_id).is_some();
        let status = if row.status == "authenticated" && !bound { "unauthenticated" } else { row.status.as_str() };
        Ok(self.auth_payload(channel_id, &row, status))
    }

    fn advance_pending(&self, channel_id: &str, row: &mut AuthRow) -> Result<(), ProtoError> {
        let key = row.device.clone().map(|(server, serial)| DeviceKey { server, serial });
        let state = key.as_ref().and_then(|k| self.backend.info(k)).map(|d| d.state);
        if now_ms() >= row.expires_ms {
            row.status = "expired".into();
            row.message = "the USB debugging prompt was not accepted in time; start again".into();
            self.set_pending(channel_id, None);
        } else if key.as_ref().is_some_and(|k| !self.device_allowed(k)) {
            row.status = "failed".into();
            row.message = "the operator's allowlist no longer includes this device".into();
            self.set_pending(channel_id, None);
        } else if key.as_ref().is_some_and(|k| self.taken_over().contains(k)) {
            // Approved meanwhile but in an operator's hands: it binds once they return it (still pending).
            row.message = "an operator is using this phone from the device wall (takeover); the binding completes \
                           when they return it — keep polling auth.status"
                .into();
        } else if let (Some(key), Some(DeviceState::Online)) = (&key, state) {
            match self.bind(channel_id, key) {
                Ok(()) => {
                    row.status = "authenticated".into();
                    row.message = "device bound".into();
                    tracing::info!(channel = %channel_id, device = %key, "device approved and bound");
                    self.push_descriptor(channel_id);
                }
                Err(e) => {
                    row.status = "failed".into();
                    row.message = e.message;
                    self.set_pending(channel_id, None);
                }
            }
        } else {
            row.message = match state {
                Some(DeviceState::Unauthorized) => APPROVE_MESSAGE.into(),
                _ => "the device is disconnected; reconnect it and accept the USB debugging prompt".into(),
            };
        }
        self.save_session(row)
    }

    /// `auth.cancel` (§8.11/§8.12): a pending session is cancelled; a finished one answers `ignored` with the
    /// current descriptor; an unknown one `not_found`.
    pub fn auth_cancel(&self, channel_id: &str, payload: &Map<String, Value>) -> Map<String, Value> {
        let id = payload.get("auth_session_id").and_then(Value::as_str).unwrap_or("");
        let bound = self.binding(channel_id).is_some();
        let auth_status = if bound { "authenticated" } else { "unauthenticated" };
        let mut p = Map::new();
        p.insert("connector_channel_id".into(), json!(channel_id));
        p.insert("auth_session_id".into(), json!(id));
        p.insert("auth_status".into(), json!(auth_status));
        match self.session_of(channel_id, payload) {
            Ok(mut row) if row.status == "pending" => {
                row.status = "canceled".into();
                row.message = "binding cancelled".into();
                if let Err(e) = self.save_session(&row) {
                    tracing::warn!(error = %e, "could not record the cancellation");
                }
                self.set_pending(channel_id, None);
                p.insert("status".into(), json!("canceled"));
                p.insert("message".into(), json!("binding cancelled"));
            }
            Ok(_) => {
                p.insert("status".into(), json!("ignored"));
                p.insert("message".into(), json!("this session already finished; nothing to cancel"));
                p.insert("connection_descriptor".into(), to_value(&self.descriptor(channel_id)));
            }
            Err(_) => {
                p.insert("status".into(), json!("not_found"));
                p.insert("message".into(), json!("no such auth session on this channel"));
            }
        }
        p
    }

    /// The operator's **Release** (device wall): ends the channel's binding through [`Hub::auth_logout`], then
    /// tells the channel (a `connection.descriptor.push`, since its agent did not ask) and writes an audit record
    /// (`operator.release`, naming the operator `by`: the operator acted on the device). Returns the released device.
    pub async fn operator_release(&self, channel_id: &str, by: &str) -> Result<DeviceKey, ProtoError> {
        let key = self
            .binding(channel_id)
            .ok_or_else(|| ProtoError::new(ErrorCode::ConnectionNotFound, "no channel holds this device any more"))?;
        self.end_lease(channel_id, "operator_release", |h| h.auth_logout(channel_id)).await?;
        self.push_descriptor(channel_id);
        let mut args = Map::new();
        args.insert("by".into(), Value::String(by.to_owned()));
        self.audit(channel_id, None, "operator.release", &key, &args, "ok");
        tracing::info!(channel = %channel_id, device = %key, by, "device released by the operator");
        Ok(key)
    }

    /// `auth.logout` as a channel sends it (§8.13/§8.14; an MCP session's end sends it too): the binding ends
    /// through [`Hub::end_lease`] — the channel's calls cut first — then [`Hub::auth_logout`].
    pub async fn logout(&self, channel_id: &str) -> Result<Map<String, Value>, ProtoError> {
        self.logout_because(channel_id, "logout").await
    }

    /// [`Hub::logout`] for an end the channel did not ask for, under its own `reason` (what `lease.end` and the cut
    /// calls' answers say): an MCP session's end — `mcp_session_end` (DELETE), `mcp_session_idle`,
    /// `mcp_session_evicted` (--max-mcp-sessions), `shutdown`.
    pub async fn logout_because(&self, channel_id: &str, reason: &str) -> Result<Map<String, Value>, ProtoError> {
        self.end_lease(channel_id, reason, |h| h.auth_logout(channel_id)).await
    }

    /// Unbinds at once (a bind whose phone was not ready; [`Hub::logout`] after its calls are cut): releases the
    /// device; the channel stays, now `created`.
    pub fn auth_logout(&self, channel_id: &str) -> Result<Map<String, Value>, ProtoError> {
        let key = self.binding(channel_id);
        self.store.set_binding(channel_id, None, now_ms()).map_err(internal)?;
        self.store.delete_auth_sessions_of(channel_id).map_err(internal)?;
        if let Some(ch) = self.lock().channels.get_mut(channel_id) {
            ch.binding = None;
            ch.pending_auth = None;
        }
        if let Some(k) = key {
            self.set_last_holder(&k, channel_id);
            self.backend.released(&k);
            tracing::info!(channel = %channel_id, device = %k, "device unbound by auth.logout");
        }
        let mut p = Map::new();
        p.insert("status".into(), json!("ok"));
        p.insert("connection_descriptor".into(), to_value(&self.descriptor(channel_id)));
        Ok(p)
    }
}
