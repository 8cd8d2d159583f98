//! Whether a call's side effect reached the phone: the one thing an agent must be told when its call is cut short
//! (an operator's takeover, the recovery ladder's reconnect). The caller of a tool wraps the tool's future in
//! [`track`]; [`AdbBackend::op`](super::adb::AdbBackend::op) marks it the moment an ordered operation (a side
//! effect: input, push, install) holds the phone's order slot and starts talking to it. A task-local rather than
//! an argument: the mark must come from the one place every side effect passes, not from each of ~30 tools.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

tokio::task_local! {
    static SENT: Arc<AtomicBool>;
}

/// Whether a side effect of the tracked call may have reached the phone.
#[derive(Clone, Debug, Default)]
pub struct Sent(Arc<AtomicBool>);

impl Sent {
    pub fn may_have_been_sent(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// What a stopped call's answer says about the phone: whether its input may have taken effect.
    pub fn what_reached_the_phone(&self) -> &'static str {
        if self.may_have_been_sent() {
            "its input had already been sent to the phone and may have taken effect"
        } else {
            "nothing was sent to the phone"
        }
    }
}

/// Runs `f`, recording in the returned [`Sent`] whether any side effect of it started on a phone.
pub fn track<F: Future>(f: F) -> (Sent, impl Future<Output = F::Output>) {
    let flag = Arc::new(AtomicBool::new(false));
    (Sent(flag.clone()), SENT.scope(flag, f))
}

/// Marks the current call's side effect as started (no-op outside [`track`]: the wall's own input, health reads).
pub(crate) fn started() {
    let _ = SENT.try_with(|s| s.store(true, Ordering::Release));
}

/// Whether the current call already started a side effect (`false` outside [`track`]).
pub(crate) fn already() -> bool {
    SENT.try_with(|s| s.load(Ordering::Acquire)).unwrap_or(false)
}
