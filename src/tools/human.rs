//! `android_request_human`: the agent asks a person for help (a login code, a captcha, a payment confirmation) and
//! waits for the answer.
//!
//! The request is open while the call waits: the wall shows it on that phone (reason, instructions) with a button
//! into the existing takeover (`channels::takeover`), `/metrics` counts the open ones, and the operator's
//! `--notify-url` webhook (`crate::notify`) carries it to a chat or pager. When the operator returns the phone
//! (`Hub::operator_return`, with an optional note), the call answers who resolved it (`session` or `api_key`, never
//! a session id: a bearer secret), how long it waited and the note. Nobody within the timeout (≤ 30 min, and never
//! past the call's deadline) → `human_unavailable`.
//!
//! The book of open requests ([`Requests`], `requests.rs`) is in memory, one request per phone at most (so it is bounded by the
//! phones); an entry lives exactly as long as the waiting call's future: the call's end, its deadline, a
//! `channel.close` or a dropped socket all drop the `Waiting` guard, which closes the request. The call is the
//! one agent call a takeover does not stop ([`Tool::waits_for_operator`]): the takeover is what it waits for.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::invalid;
use super::registry::{BoxFuture, Tool, ToolCall, ToolSpec};
use super::requests::{Requests, View};
use crate::device::text::phone_text;
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::now_ms;

/// The longest an agent may wait for a person (the issue's 30 minutes).
pub const MAX_WAIT_S: u64 = 30 * 60;
/// Longest reason / instructions / operator note kept (characters, after cleaning).
pub const MAX_REASON: usize = 300;
pub const MAX_INSTRUCTIONS: usize = 2000;
pub const MAX_NOTE: usize = 2000;
/// Taken off the call's deadline so the wait ends with `human_unavailable`, not with the generic deadline error.
const DEADLINE_MARGIN: Duration = Duration::from_secs(2);

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RequestArgs {
    /// Shown to the operator, e.g. "SMS login code"
    #[schemars(length(min = 1, max = 300))]
    reason: String,
    /// Steps for the operator
    #[schemars(length(min = 1, max = 2000))]
    instructions: Option<String>,
    /// Seconds to wait
    #[schemars(range(min = 10, max = 1800))]
    #[serde(default = "timeout_600")]
    timeout_s: u64,
}

fn timeout_600() -> u64 {
    600
}

pub struct RequestHuman {
    spec: ToolSpec,
    book: Arc<Requests>,
}

pub fn tools(book: &Arc<Requests>) -> Vec<Arc<dyn Tool>> {
    let spec = ToolSpec {
        id: "android_request_human",
        title: "Ask a person for help",
        description: "Waits until an operator takes the phone over and returns it (a login code, captcha or payment \
                      you cannot do); answers their note. human_unavailable on timeout.",
        input: super::args::schema::<RequestArgs>(),
        output: json!({"type": "object", "properties": {
            "resolved_by": {"type": "string"}, "waited_ms": {"type": "integer"}, "note": {"type": ["string", "null"]}}}),
        // Not a device action, but an action: audited as a record of its own whatever its outcome.
        side_effect: true,
        settles: false,
        deadline: Duration::from_secs(MAX_WAIT_S) + Duration::from_secs(10),
    };
    vec![Arc::new(RequestHuman { spec, book: book.clone() })]
}

impl Tool for RequestHuman {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn waits_for_operator(&self) -> bool {
        true
    }

    fn call(&self, call: ToolCall) -> BoxFuture<Result<Value, ProtoError>> {
        let book = self.book.clone();
        Box::pin(async move {
            let Some(key) = call.binding.clone() else {
                return Err(ProtoError::new(
                    ErrorCode::ConnectionNotAuthenticated,
                    "no device is bound to this channel",
                ));
            };
            let a: RequestArgs = super::args::parse(&call.args)?;
            // The operator reads these on the wall and in a chat: no control or bidi characters.
            let reason = phone_text(&a.reason, MAX_REASON);
            if reason.is_empty() {
                return Err(invalid("argument `reason` must say what you need in visible characters"));
            }
            let instructions = a.instructions.map(|i| phone_text(&i, MAX_INSTRUCTIONS)).filter(|i| !i.is_empty());
            let wait =
                Duration::from_secs(a.timeout_s.min(MAX_WAIT_S)).min(call.deadline.saturating_sub(DEADLINE_MARGIN));
            let since_ms = now_ms();
            let view = View {
                request_id: book.next.fetch_add(1, Ordering::Relaxed) + 1,
                reason,
                instructions,
                since_ms,
                expires_ms: since_ms + wait.as_millis() as u64,
            };
            let (mut waiting, rx) = book.open(&key, view.clone())?;
            tracing::info!(device = %key, request_id = view.request_id, wait_s = wait.as_secs(), "an agent asks for a person");
            if let Some(notifier) = book.notify.get() {
                let event = json!({
                    "event": "human_request",
                    "request_id": view.request_id,
                    "device": {"serial": key.serial, "adb_server": key.server},
                    "reason": view.reason,
                    "instructions": view.instructions,
                    "since_ms": view.since_ms,
                    "expires_ms": view.expires_ms,
                    "what_to_do": "open the device wall, Take over the phone, help, then Return it with a note",
                });
                // Never holds the call up: the webhook's retries run beside the wait. At most one per phone a
                // minute (`notify::Notifier`), closed by `human_request_closed` when the request ends.
                notifier.opened(&key.to_string(), view.request_id, event);
            }
            let started = Instant::now();
            let answer = tokio::time::timeout(wait, rx).await;
            waiting.outcome = if matches!(answer, Ok(Ok(_))) { "answered" } else { "expired" };
            drop(waiting);
            match answer {
                Ok(Ok(r)) => Ok(json!({
                    "resolved_by": r.by,
                    "waited_ms": started.elapsed().as_millis() as u64,
                    "note": r.note,
                })),
                _ => Err(ProtoError::new(
                    ErrorCode::HumanUnavailable,
                    format!(
                        "no operator answered within {} s; nothing was done on the phone. Try another way, or ask \
                         again later",
                        wait.as_secs()
                    ),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceKey;

    fn key() -> DeviceKey {
        DeviceKey { server: "127.0.0.1:5037".into(), serial: "s".into() }
    }

    fn view(id: u64) -> View {
        View { request_id: id, reason: "r".into(), instructions: None, since_ms: 0, expires_ms: 0 }
    }

    #[tokio::test]
    async fn one_request_per_phone_closed_by_its_waiter() {
        let book = Arc::new(Requests::default());
        let (w, rx) = book.open(&key(), view(1)).unwrap();
        assert!(book.open(&key(), view(2)).is_err());
        assert_eq!(book.open_count(), 1);
        drop(w);
        assert_eq!(book.open_count(), 0, "a call that ended closes its request");
        assert!(rx.await.is_err());
        let (_w, rx) = book.open(&key(), view(3)).unwrap();
        assert!(book.resolve(&key(), "session", Some("done".into())));
        assert_eq!(rx.await.unwrap().note.as_deref(), Some("done"));
        assert!(!book.resolve(&key(), "session", None), "answered once");
    }
}
