//! The book of each channel's work under its binding (`work.rs` is how the hub uses it): the calls running or
//! queued, the token that cuts them, why the binding is ending, what was cut. Apart from the hub's `impl`s so that
//! the hub can own it without a circle; `server/ws/tool.rs` holds a [`Ticket`] per call.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::device::sent::Sent;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Every channel's work book, shared with the tickets (which outlive any borrow of the hub).
#[derive(Clone, Default)]
pub(super) struct Works(Arc<Mutex<HashMap<String, Work>>>);

impl Works {
    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<String, Work>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[derive(Default)]
pub(super) struct Work {
    pub(super) token: CancellationToken,
    /// Why the binding is ending, once it is: the calls' answers and the `lease.end` record say it.
    pub(super) ending: Arc<OnceLock<String>>,
    pub(super) calls: HashMap<u64, Sent>,
    /// Calls of this binding cut so far (by its end, or by its channel's route closing: [`Ticket::closed`]), and
    /// whether any of them may have sent the phone input.
    pub(super) cut: u32,
    pub(super) cut_sent: bool,
    pub(super) drained: Arc<Notify>,
}

/// A ticket id, unique for the process's life.
pub(super) fn next_id() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// One call's place in its channel's work: the token that cuts it, released (and counted) on drop.
pub struct Ticket {
    pub(super) works: Works,
    pub(super) channel: String,
    pub(super) id: u64,
    pub(super) token: CancellationToken,
    pub(super) ending: Arc<OnceLock<String>>,
    /// Cut by its channel's route closing ([`Ticket::closed`]) rather than by the binding's end.
    pub(super) closed: AtomicBool,
}

impl Ticket {
    /// Cancelled the moment the channel's binding starts ending.
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// The call's side-effect flag (`device::sent::track`), read when the binding ends.
    pub fn watch(&self, sent: &Sent) {
        if let Some(w) = self.works.lock().get_mut(&self.channel) {
            w.calls.insert(self.id, sent.clone());
        }
    }

    /// The call was dropped by its channel's close or its client (not by the binding's end): if it had sent the
    /// phone input, the binding's end stops what the phone may still be playing, as for a cut call.
    pub fn stopped(&self, sent: &Sent) {
        if sent.may_have_been_sent() {
            if let Some(w) = self.works.lock().get_mut(&self.channel) {
                w.cut_sent = true;
            }
        }
    }

    /// The call was cut because its channel's route closed (its data plane disconnected, or `channel.close`) while
    /// the binding stays (until its lease ends or the channel comes back): answered [`closed_error`], audited `cut`
    /// and counted among the binding's cut calls, which `lease.end` reports; if it may have sent input, the
    /// binding's end stops what the phone may still be playing, as for a call its end cut.
    pub fn closed(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Why the call was cut (the binding's end reason), or `None` while it was not.
    pub fn cut(&self) -> Option<String> {
        self.token.is_cancelled().then(|| self.ending.get().cloned().unwrap_or_else(|| "ended".to_owned()))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut g = self.works.lock();
        let Some(w) = g.get_mut(&self.channel) else { return };
        if let Some(sent) = w.calls.remove(&self.id) {
            if self.token.is_cancelled() || self.closed.load(Ordering::Acquire) {
                w.cut += 1;
                w.cut_sent |= sent.may_have_been_sent();
            }
        }
        if w.calls.is_empty() {
            w.drained.notify_waiters();
        }
    }
}

/// The answer of a call cut by the end of its channel's binding: whether its input may have reached the phone.
pub fn cut_error(reason: &str, sent: &Sent) -> ProtoError {
    let what = sent.what_reached_the_phone();
    let sent = sent.may_have_been_sent();
    ProtoError::new(
        ErrorCode::ToolInvokeFailed,
        format!(
            "cut: this channel's binding ended ({reason}) while the call was running or queued; the call was stopped \
             before the phone was given back and {what} (input_may_have_been_sent: {sent}); nothing it read is \
             returned. Bind a phone again (auth.start) to continue"
        ),
    )
    .with_details(json!({"input_may_have_been_sent": sent, "cut": true, "lease_end": reason}))
}

/// The answer of a call cut because its channel's route closed — its data plane disconnected or `channel.close` —
/// while its binding stays: what [`cut_error`] says, with the cause; a reconnecting client that repeats the call's
/// `tool_call_id` reads it.
pub fn closed_error(sent: &Sent) -> ProtoError {
    let what = sent.what_reached_the_phone();
    let sent = sent.may_have_been_sent();
    ProtoError::new(
        ErrorCode::ToolInvokeFailed,
        format!(
            "cut: the call was cancelled because the channel closed or its data plane disconnected while it was \
             running or queued; it was stopped and {what} (input_may_have_been_sent: {sent}); nothing it read is \
             returned. The binding stays until its lease ends: open the channel again to continue"
        ),
    )
    .with_details(json!({"input_may_have_been_sent": sent, "cut": true, "channel_closed": true}))
}

/// What ending a binding stopped.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cut {
    pub calls: u32,
    pub input_may_have_been_sent: bool,
}
