//! The operator's takeover of a phone (device wall: `POST /api/v1/devices/{id}/takeover`, `…/return`).
//!
//! While an operator holds a phone, the bound agent's tool calls are refused with `operator_control` before
//! anything runs (gate in `server/ws/tool.rs`): an agent that kept tapping would fight the person. The calls the
//! agent sent *before* the takeover are stopped by it ([`Hub::operator_gate`]'s token): queued ones never reach
//! the phone, a running one is hung up, and none answers with anything it read (the operator's screen, the text
//! the operator types) — each answers `operator_control`, saying whether its input may have been sent. The state lives
//! here, beside the binding it overrides, and only in memory — a restart ends every takeover, which is the safe
//! side (nobody is left locked out by a browser that is gone). A takeover ends on return, on the operator's
//! logout, or after `idle` without any operator input; expiry is checked whenever the state is read, so an idle
//! takeover stops blocking the agent at its idle deadline even if no page ever asks again.
//!
//! Every change is audited (`operator.takeover`, `operator.return`; inputs are audited by the wall as
//! `operator.input`). The operator is recorded by name (`api-key` for the system key, the account's name for a
//! login: issue 50), never by the session id: that is a bearer secret.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::holds::{control_error, held_until, Hold};
use super::hub::Hub;
use crate::device::sent::Sent;
use crate::device::DeviceKey;
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::now_ms;

/// Longest a takeover waits for the phone's in-flight input to be stopped before it answers anyway.
const STOP_WAIT: Duration = Duration::from_secs(25);

pub use super::holds::{Operator, TakeoverInfo, OPERATOR_CHANNEL};

impl Hub {
    fn takeovers(&self) -> std::sync::MutexGuard<'_, HashMap<DeviceKey, Hold>> {
        self.takeovers.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops takeovers past their idle deadline (audited as returns with reason `idle`).
    fn expire_takeovers(&self) {
        let expired: Vec<(DeviceKey, Hold)> = {
            let mut g = self.takeovers();
            let keys: Vec<DeviceKey> =
                g.iter().filter(|(_, h)| h.last_used.elapsed() >= h.idle).map(|(k, _)| k.clone()).collect();
            keys.into_iter().filter_map(|k| g.remove(&k).map(|h| (k, h))).collect()
        };
        for (key, hold) in expired {
            self.audit_return(&key, &hold.by, "idle");
        }
    }

    fn audit_return(&self, key: &DeviceKey, by: &Operator, reason: &str) {
        let args = obj(json!({"by": by.name(), "reason": reason}));
        self.audit(OPERATOR_CHANNEL, None, "operator.return", key, &args, "ok");
        tracing::info!(device = %key, by = by.name(), reason, "operator returned the phone to its agent");
    }

    /// The gate of every agent tool call: `Err(operator_control)` while an operator holds `key`, else the token
    /// the call runs under — cancelled the moment an operator takes the phone over. Taken under the same lock as
    /// the takeover, so a call is either refused here or cancelled by the takeover: none slips between. The caller
    /// (`server/ws/tool.rs`) drops the call's future when it fires, which closes its adb connection and gives up
    /// its place in the phone's order queue before the operator's first input can have it.
    pub fn operator_gate(&self, key: &DeviceKey) -> Result<CancellationToken, ProtoError> {
        self.expire_takeovers();
        let holds = self.takeovers();
        if let Some(h) = holds.get(key) {
            return Err(held_until(h));
        }
        let mut calls = self.takeovers.1.lock().unwrap_or_else(|e| e.into_inner());
        Ok(calls.entry(key.clone()).or_default().clone())
    }

    /// Every phone an operator holds now: a pool binding never picks one, a named one is refused (`auth.rs`).
    pub fn taken_over(&self) -> std::collections::HashSet<DeviceKey> {
        self.expire_takeovers();
        self.takeovers().keys().cloned().collect()
    }

    /// The takeover of `key`, if any.
    pub fn takeover_of(&self, key: &DeviceKey) -> Option<TakeoverInfo> {
        self.expire_takeovers();
        self.takeovers().get(key).map(|h| TakeoverInfo {
            by: h.by.clone(),
            since_ms: h.since_ms,
            expires_ms: h.last_used_ms.saturating_add(h.idle.as_millis() as u64),
        })
    }

    /// Takes `key` over for `by` (idempotent for the same operator: it refreshes the idle clock). Another
    /// operator's takeover is refused with `operator_control`. Answers once what the agent's stopped calls sent the
    /// phone can no longer arrive: a gesture the phone helper was still playing is stopped (`Backend::cut_if`,
    /// as a lease's end does, issue 47), so the operator's first input never meets the agent's swipe.
    pub async fn operator_takeover(
        &self,
        key: &DeviceKey,
        by: Operator,
        idle: Duration,
    ) -> Result<TakeoverInfo, ProtoError> {
        let (info, stopped) = self.take_over(key, by, idle)?;
        if !stopped.is_empty() {
            let sent = Box::new(move || stopped.iter().any(Sent::may_have_been_sent));
            if tokio::time::timeout(STOP_WAIT, self.backend.clone().cut_if(key.clone(), sent)).await.is_err() {
                tracing::warn!(device = %key, "stopping the phone's in-flight input at a takeover took too long");
            }
        }
        Ok(info)
    }

    /// The takeover itself; with the side-effect flags of the agent's calls it stopped (empty: none was running).
    fn take_over(
        &self,
        key: &DeviceKey,
        by: Operator,
        idle: Duration,
    ) -> Result<(TakeoverInfo, Vec<Sent>), ProtoError> {
        self.expire_takeovers();
        let fresh = {
            let mut g = self.takeovers();
            match g.get_mut(key) {
                Some(h) if h.by != by => return Err(control_error()),
                Some(h) => {
                    (h.last_used, h.last_used_ms) = (Instant::now(), now_ms());
                    h.idle = idle;
                    false
                }
                None => {
                    let (last_used, since_ms) = (Instant::now(), now_ms());
                    g.insert(key.clone(), Hold { by: by.clone(), since_ms, last_used, last_used_ms: since_ms, idle });
                    // The agent's calls already on their way to this phone (queued for its order slot, running,
                    // or between the gate and the tool) stop now: the hold holds from its first instant, not from
                    // the agent's next call.
                    if let Some(t) = self.takeovers.1.lock().unwrap_or_else(|e| e.into_inner()).remove(key) {
                        t.cancel();
                    }
                    true
                }
            }
        };
        let mut stopped = Vec::new();
        if fresh {
            let holder = self.holders().into_iter().find(|h| &h.device == key).map(|h| h.channel_id);
            if let Some(w) = holder.as_ref().and_then(|ch| self.works.lock().get(ch).map(|w| w.calls.clone())) {
                stopped.extend(w.into_values());
            }
            let args = obj(json!({"by": by.name(), "idle_timeout_s": idle.as_secs(), "agent_channel": holder}));
            self.audit(OPERATOR_CHANNEL, None, "operator.takeover", key, &args, "ok");
            tracing::info!(device = %key, by = by.name(), "operator took the phone over");
        }
        let info =
            self.takeover_of(key).ok_or_else(|| ProtoError::new(ErrorCode::Internal, "the takeover vanished"))?;
        Ok((info, stopped))
    }

    /// Checks that `by` holds `key` and restarts its idle clock (called before every operator input).
    pub fn operator_touch(&self, key: &DeviceKey, by: &Operator) -> Result<(), ProtoError> {
        self.expire_takeovers();
        match self.takeovers().get_mut(key) {
            Some(h) if &h.by == by => {
                (h.last_used, h.last_used_ms) = (Instant::now(), now_ms());
                Ok(())
            }
            Some(_) => Err(control_error()),
            None => Err(ProtoError::new(
                ErrorCode::PermissionDenied,
                "take the phone over first (POST /api/v1/devices/{id}/takeover); input works only for the holder",
            )),
        }
    }

    /// Ends `by`'s takeover of `key` (the Return button). `Ok(false)`: nothing was held. The return answers the
    /// agent's open request for a person on that phone (`tools::human`), with the operator's `note` — only a
    /// return does: an idle expiry or a logout is nobody having helped, and the request keeps waiting.
    pub fn operator_return(&self, key: &DeviceKey, by: &Operator, note: Option<String>) -> Result<bool, ProtoError> {
        self.expire_takeovers();
        let removed = {
            let mut g = self.takeovers();
            match g.get(key) {
                Some(h) if &h.by != by => return Err(control_error()),
                Some(_) => g.remove(key),
                None => None,
            }
        };
        if let Some(h) = &removed {
            // The note is the operator's words to the agent: the audit keeps its length only (it may be a code).
            let note_chars = note.as_ref().map_or(0, |n| n.chars().count());
            let answered = self.registry().human().resolve(key, h.by.kind(), note);
            let args = obj(
                json!({"by": h.by.name(), "reason": "return", "human_request": answered, "note_chars": note_chars}),
            );
            self.audit(OPERATOR_CHANNEL, None, "operator.return", key, &args, "ok");
            tracing::info!(device = %key, by = h.by.name(), human_request = answered, "operator returned the phone to its agent");
        }
        Ok(removed.is_some())
    }

    /// Ends every takeover of a wall session (its logout).
    pub fn operator_logout(&self, session_id: &str) {
        let ended: Vec<(DeviceKey, Operator)> = {
            let mut g = self.takeovers();
            let mine = |by: &Operator| matches!(by, Operator::Session(id, _) if id == session_id);
            let keys: Vec<DeviceKey> = g.iter().filter(|(_, h)| mine(&h.by)).map(|(k, _)| k.clone()).collect();
            keys.into_iter().filter_map(|k| g.remove(&k).map(|h| (k, h.by))).collect()
        };
        for (key, by) in ended {
            self.audit_return(&key, &by, "logout");
        }
    }
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}
