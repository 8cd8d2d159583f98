//! Device binding as the card's auth flow (`auth.start|status|cancel|logout`, protocol §8.7–§8.14).
//!
//! Binding completes synchronously: `auth.start` either binds a device (status `authenticated`, with the
//! descriptor) or fails with a reason. Sessions are still recorded so `auth.status` and `auth.cancel` answer
//! consistently afterwards, across restarts.

use serde_json::{json, Map, Value};

use super::{internal, to_value, Hub};
use crate::device::{DeviceKey, DeviceState};
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::{ids, now_ms};
use crate::store::AuthRow;

/// How long a finished auth session stays queryable.
const SESSION_TTL_MS: u64 = 10 * 60 * 1000;

/// The result of an auth packet: an ack payload, and an error to put beside it when the operation failed.
pub struct AuthOutcome {
    pub payload: Map<String, Value>,
    pub error: Option<ProtoError>,
}

/// Serials are printable ASCII without spaces or shell metacharacters (USB serials, `host:port`, mDNS names).
fn valid_serial(s: &str) -> bool {
    !s.is_empty() && s.len() <= 128 && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._:-[]%".contains(&b))
}

impl Hub {
    fn flow_known(&self, flow_id: &str) -> bool {
        self.card.auth_flows.iter().any(|f| f.id == flow_id)
    }

    /// `auth.start`: bind the requested device, or any free online one (pool semantics).
    pub fn auth_start(&self, channel_id: &str, payload: &Map<String, Value>) -> AuthOutcome {
        let flow_id = payload.get("flow_id").and_then(Value::as_str).unwrap_or("");
        let base = |status: &str, session: Option<&str>| {
            let mut p = Map::new();
            p.insert("connector_channel_id".into(), json!(channel_id));
            p.insert("flow_id".into(), json!(flow_id));
            if let Some(s) = session {
                p.insert("auth_session_id".into(), json!(s));
            }
            p.insert("status".into(), json!(status));
            p
        };
        let fail = |code: ErrorCode, msg: String| {
            let mut p = base("failed", None);
            p.insert("message".into(), json!(msg));
            AuthOutcome { payload: p, error: Some(ProtoError::new(code, msg)) }
        };
        if !self.flow_known(flow_id) {
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
        if let Some(k) = input.keys().find(|k| k.as_str() != "serial") {
            return fail(
                ErrorCode::AuthInputInvalid,
                format!("auth.start input field {k:?} is unknown (only `serial`)"),
            );
        }
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
        let existing = self.binding(channel_id);
        let key = match existing {
            Some(k) if serial.as_deref().is_none_or(|s| s == k.serial) => k,
            Some(k) => {
                return fail(
                    ErrorCode::DeviceBusy,
                    format!(
                        "this channel is already bound to another device ({}); auth.logout first",
                        super::mask_serial(&k.serial)
                    ),
                )
            }
            None => match self.pick_device(serial.as_deref()) {
                Ok(k) => k,
                Err(e) => return fail(e.code, e.message),
            },
        };
        if let Err(e) = self.bind(channel_id, &key) {
            return fail(e.code, e.message);
        }
        let session = ids::auth_session_id();
        let row = AuthRow {
            auth_session_id: session.clone(),
            channel_id: channel_id.to_owned(),
            flow_id: flow_id.to_owned(),
            status: "authenticated".into(),
            message: "device bound".into(),
            expires_ms: now_ms() + SESSION_TTL_MS,
        };
        if let Err(e) = self.store.put_auth_session(&row, now_ms()) {
            return fail(ErrorCode::Internal, internal(e).message);
        }
        tracing::info!(channel = %channel_id, device = %key, "device bound");
        let mut p = base("authenticated", Some(&session));
        p.insert("expires_at".into(), json!(row.expires_ms));
        p.insert("message".into(), json!("device bound"));
        p.insert("connection_descriptor".into(), to_value(&self.descriptor(channel_id)));
        AuthOutcome { payload: p, error: None }
    }

    /// Chooses a device: the named serial, or the first online allowed device no channel holds.
    fn pick_device(&self, serial: Option<&str>) -> Result<DeviceKey, ProtoError> {
        let allowed = |s: &str| self.cfg.allow_serials.is_empty() || self.cfg.allow_serials.iter().any(|a| a == s);
        let held: std::collections::HashSet<DeviceKey> =
            self.lock().channels.values().filter_map(|c| c.binding.clone()).collect();
        let devices = self.backend.devices();
        match serial {
            Some(s) => {
                if !allowed(s) {
                    return Err(ProtoError::new(
                        ErrorCode::PermissionDenied,
                        "the operator's allowlist does not include this device",
                    ));
                }
                let d = devices.iter().find(|d| d.key.serial == s).ok_or_else(|| {
                    ProtoError::new(ErrorCode::DeviceNotFound, "no adb server lists a device with this serial")
                })?;
                if held.contains(&d.key) {
                    return Err(ProtoError::new(ErrorCode::DeviceBusy, "the device is bound to another channel"));
                }
                match d.state {
                    DeviceState::Online => Ok(d.key.clone()),
                    DeviceState::Unauthorized => Err(ProtoError::new(
                        ErrorCode::DeviceUnauthorized,
                        "the device has not authorised this host: accept the USB debugging prompt on the phone",
                    )),
                    _ => Err(ProtoError::new(ErrorCode::DeviceOffline, "the device is offline")),
                }
            }
            None => devices
                .iter()
                .find(|d| d.state == DeviceState::Online && allowed(&d.key.serial) && !held.contains(&d.key))
                .map(|d| d.key.clone())
                .ok_or_else(|| {
                    ProtoError::new(ErrorCode::DeviceNotFound, "no free online device is available to bind")
                }),
        }
    }

    fn bind(&self, channel_id: &str, key: &DeviceKey) -> Result<(), ProtoError> {
        let mut inner = self.lock();
        if inner.channels.iter().any(|(id, c)| id != channel_id && c.binding.as_ref() == Some(key)) {
            return Err(ProtoError::new(ErrorCode::DeviceBusy, "the device is bound to another channel"));
        }
        self.store.set_binding(channel_id, Some((&key.server, &key.serial)), now_ms()).map_err(internal)?;
        if let Some(ch) = inner.channels.get_mut(channel_id) {
            ch.binding = Some(key.clone());
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

    /// `auth.status` (§8.9/§8.10).
    pub fn auth_status(
        &self,
        channel_id: &str,
        payload: &Map<String, Value>,
    ) -> Result<Map<String, Value>, ProtoError> {
        let row = self.session_of(channel_id, payload)?;
        let bound = self.binding(channel_id).is_some();
        let status = if row.status == "authenticated" && !bound { "unauthenticated" } else { row.status.as_str() };
        let mut p = Map::new();
        p.insert("connector_channel_id".into(), json!(channel_id));
        p.insert("flow_id".into(), json!(row.flow_id));
        p.insert("auth_session_id".into(), json!(row.auth_session_id));
        p.insert("status".into(), json!(status));
        p.insert("message".into(), json!(row.message));
        p.insert("expires_at".into(), json!(row.expires_ms));
        if status == "authenticated" {
            p.insert("connection_descriptor".into(), to_value(&self.descriptor(channel_id)));
        }
        Ok(p)
    }

    /// `auth.cancel` (§8.11/§8.12): binding is synchronous, so there is never a pending session to cancel; a known
    /// session answers `ignored` with the current descriptor, an unknown one `not_found`.
    pub fn auth_cancel(&self, channel_id: &str, payload: &Map<String, Value>) -> Map<String, Value> {
        let id = payload.get("auth_session_id").and_then(Value::as_str).unwrap_or("");
        let mut p = Map::new();
        p.insert("connector_channel_id".into(), json!(channel_id));
        p.insert("auth_session_id".into(), json!(id));
        match self.session_of(channel_id, payload) {
            Ok(_) => {
                let bound = self.binding(channel_id).is_some();
                p.insert("status".into(), json!("ignored"));
                p.insert("auth_status".into(), json!(if bound { "authenticated" } else { "unauthenticated" }));
                p.insert("message".into(), json!("binding already completed; nothing to cancel"));
                p.insert("connection_descriptor".into(), to_value(&self.descriptor(channel_id)));
            }
            Err(_) => {
                p.insert("status".into(), json!("not_found"));
                p.insert(
                    "auth_status".into(),
                    json!(if self.binding(channel_id).is_some() { "authenticated" } else { "unauthenticated" }),
                );
                p.insert("message".into(), json!("no such auth session on this channel"));
            }
        }
        p
    }

    /// `auth.logout` (§8.13/§8.14): releases the device; the channel stays, now `created`.
    pub fn auth_logout(&self, channel_id: &str) -> Result<Map<String, Value>, ProtoError> {
        let key = self.binding(channel_id);
        self.store.set_binding(channel_id, None, now_ms()).map_err(internal)?;
        self.store.delete_auth_sessions_of(channel_id).map_err(internal)?;
        if let Some(ch) = self.lock().channels.get_mut(channel_id) {
            ch.binding = None;
        }
        if let Some(k) = key {
            self.backend.released(&k);
            tracing::info!(channel = %channel_id, device = %k, "device unbound by auth.logout");
        }
        let mut p = Map::new();
        p.insert("status".into(), json!("ok"));
        p.insert("connection_descriptor".into(), to_value(&self.descriptor(channel_id)));
        Ok(p)
    }
}
