//! The device work of each channel's binding (issue 47): the tool calls running or queued under it, so that
//! every way a binding ends — `auth.logout`, the wall's Release, MCP session end (DELETE, idle, shutdown), lease
//! expiry — first stops them and only then gives the phone back ([`Hub::end_lease`]).
//!
//! A call takes a [`Ticket`] after the channel's binding is checked (`server/ws/tool.rs`) and holds it until its
//! outcome is answered and audited. Ending a binding marks the channel ending (no new ticket), cancels the tickets'
//! token — the caller drops the tool's future at once: a call still queued for the phone's order slot never
//! reaches the phone, a running one is hung up — and waits (bounded) until every ticket is gone, i.e. every cut
//! call is audited as `cut`. When one of them may have sent input, the device layer stops what the phone may still
//! be playing (`Backend::cut`: the phone helper's process killed, one ordered round trip as a fence). Then
//! `lease.end` is audited with the reason and what was cut (the calls' pending counts chained before it), and only
//! then is the binding removed: the phone is bindable again once the previous holder's work has stopped, never
//! while it is still arriving.
//!
//! A call its channel's route closing stopped (the data plane disconnected, `channel.close`) is cut the same way
//! while the binding stays: answered and audited `cut`, counted in this binding's `lease.end` (`Ticket::closed`).
//!
//! A takeover stops calls through its own token (`takeover.rs`): it suspends a binding rather than ending it.

use std::time::Duration;

use serde_json::json;

use super::hub::Hub;
use super::tickets::{Cut, Ticket};
use crate::device::sent::Sent;
use crate::device::DeviceKey;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Longest a binding's end waits for its cut calls to answer and be audited (each is dropped at once; what takes
/// time is the audit write on a busy machine).
const DRAIN_WAIT: Duration = Duration::from_secs(30);
/// Longest the device layer's stop of a phone's in-flight input may take before the phone is given back anyway.
const STOP_WAIT: Duration = Duration::from_secs(30);

impl Hub {
    /// A call's ticket under `channel`'s binding to `binding`: refused when the binding is ending or is no longer
    /// this one (it ended between the caller's check and now). Taken under the work book's lock, with the binding
    /// read inside it, so a call is either refused here or cut by the end: none slips between.
    pub fn lease_ticket(&self, channel: &str, binding: &DeviceKey) -> Result<Ticket, ProtoError> {
        let mut g = self.works.lock();
        let w = g.entry(channel.to_owned()).or_default();
        if let Some(reason) = w.ending.get() {
            return Err(ProtoError::new(
                ErrorCode::ConnectionNotAuthenticated,
                format!("this channel's binding is ending ({reason}); nothing ran. Bind a phone again (auth.start)"),
            ));
        }
        if self.binding(channel).as_ref() != Some(binding) {
            return Err(ProtoError::new(
                ErrorCode::ConnectionNotAuthenticated,
                "the device binding of this channel ended; nothing ran. Bind a phone again (auth.start)",
            ));
        }
        // Unique across bindings: a ticket that outlived its binding's end (the drain's bound) never matches a
        // call of the channel's next binding.
        let id = super::tickets::next_id();
        w.calls.insert(id, Sent::default());
        Ok(Ticket {
            works: self.works.clone(),
            channel: channel.to_owned(),
            id,
            token: w.token.clone(),
            ending: w.ending.clone(),
            closed: Default::default(),
        })
    }

    /// Ends `channel`'s binding the one way every end takes: its calls are cut (queued ones never reach the phone,
    /// the running one is hung up), each answered and audited as `cut`; the phone's in-flight input stopped when
    /// one of them may have sent some (`Backend::cut`); `lease.end` audited with `reason` and what was cut; then
    /// `unbind` runs (the caller's own unbinding: logout, cleanup). Returns what `unbind` returned.
    pub async fn end_lease<R>(&self, channel: &str, reason: &str, unbind: impl FnOnce(&Hub) -> R) -> R {
        let key = self.binding(channel);
        let drained = {
            let mut g = self.works.lock();
            let w = g.entry(channel.to_owned()).or_default();
            let _ = w.ending.set(reason.to_owned());
            w.token.cancel();
            w.drained.clone()
        };
        let deadline = tokio::time::Instant::now() + DRAIN_WAIT;
        loop {
            let notified = drained.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let left = self.works.lock().get(channel).map_or(0, |w| w.calls.len());
            if left == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                tracing::warn!(channel, calls = left, "cut calls did not finish in time; the binding ends anyway");
                break;
            }
        }
        let cut = {
            let g = self.works.lock();
            g.get(channel).map_or(Cut::default(), |w| Cut { calls: w.cut, input_may_have_been_sent: w.cut_sent })
        };
        if let Some(k) = &key {
            if cut.input_may_have_been_sent
                && tokio::time::timeout(STOP_WAIT, self.backend.clone().cut(k.clone())).await.is_err()
            {
                tracing::warn!(channel, device = %k, "stopping the phone's in-flight input took too long");
            }
            let args = crate::protocol::packet::obj([
                ("reason", json!(reason)),
                ("cut_calls", json!(cut.calls)),
                ("input_may_have_been_sent", json!(cut.input_may_have_been_sent)),
            ]);
            // The counts still in memory (`audit::reads`: a cut call that sent the phone nothing is counted, not
            // recorded on its own) are chained first, in the same commit: every cut call is in the chain before the
            // release record.
            let mut writes = self.take_reads();
            let kept = writes.clone();
            writes.push(self.audit_entry(channel, None, "lease.end", k, &args, "ok"));
            if let Err(e) = self.store.commit_all(writes) {
                tracing::error!(error = %e, "could not append to the audit log");
                self.restore_reads(kept);
            }
            tracing::info!(channel, device = %k, reason, cut = cut.calls, "binding ending");
        }
        let r = unbind(self);
        self.works.lock().remove(channel);
        r
    }
}
