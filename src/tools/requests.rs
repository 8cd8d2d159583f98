//! The book of open requests for a person (`android_request_human`, in `human.rs`): one per phone, open exactly as
//! long as the waiting call's future (its [`Waiting`] guard). Apart from the tool so the registry can hold it (the
//! wall shows the open ones, `/metrics` counts them, an operator's return answers one) without naming a tool file.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, OnceLock};

use tokio::sync::oneshot;

use crate::device::DeviceKey;
use crate::notify::{Notifier, NotifyUrl};
use crate::protocol::errors::{ErrorCode, ProtoError};

/// How an open request was answered.
#[derive(Clone, Debug)]
pub struct Resolution {
    /// `session` or `api_key` (`channels::takeover::Operator::kind`).
    pub by: &'static str,
    pub note: Option<String>,
}

/// An open request as the wall and the webhook show it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct View {
    pub request_id: u64,
    pub reason: String,
    pub instructions: Option<String>,
    pub since_ms: u64,
    /// When it answers `human_unavailable` unless someone returns the phone first.
    pub expires_ms: u64,
}

struct Open {
    view: View,
    tx: oneshot::Sender<Resolution>,
}

/// The open requests, one per phone.
#[derive(Default)]
pub struct Requests {
    open: Mutex<HashMap<DeviceKey, Open>>,
    pub(super) next: AtomicU64,
    pub(super) notify: OnceLock<Arc<Notifier>>,
}

/// Closes its request when the waiting call ends, however it ends.
pub(super) struct Waiting {
    book: Arc<Requests>,
    key: DeviceKey,
    id: u64,
    /// How it ended, for the webhook's closing event: `answered`, `expired`, or (the call dropped: the agent
    /// cancelled, its channel closed) `cancelled`.
    pub(super) outcome: &'static str,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        {
            let mut g = self.book.lock();
            if g.get(&self.key).is_some_and(|o| o.view.request_id == self.id) {
                g.remove(&self.key);
            }
        }
        if let Some(n) = self.book.notify.get() {
            let event = serde_json::json!({
                "event": "human_request_closed",
                "outcome": self.outcome,
                "device": {"serial": self.key.serial, "adb_server": self.key.server},
            });
            n.closed(&self.key.to_string(), self.id, event);
        }
    }
}

impl Requests {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<DeviceKey, Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The operator's webhook (`run.rs`, once at start-up).
    pub fn set_notify(&self, url: NotifyUrl) {
        let _ = self.notify.set(Arc::new(Notifier::new(url)));
    }

    /// The open request on `key`, if any.
    pub fn view(&self, key: &DeviceKey) -> Option<View> {
        self.lock().get(key).map(|o| o.view.clone())
    }

    /// How many requests wait for a person now (`/metrics`).
    pub fn open_count(&self) -> usize {
        self.lock().len()
    }

    /// Answers the open request on `key` (the operator returned the phone). `true` when one was waiting.
    pub fn resolve(&self, key: &DeviceKey, by: &'static str, note: Option<String>) -> bool {
        let Some(open) = self.lock().remove(key) else { return false };
        open.tx.send(Resolution { by, note }).is_ok()
    }

    pub(super) fn open(
        self: &Arc<Self>,
        key: &DeviceKey,
        view: View,
    ) -> Result<(Waiting, oneshot::Receiver<Resolution>), ProtoError> {
        let mut g = self.lock();
        if g.contains_key(key) {
            return Err(ProtoError::new(
                ErrorCode::DeviceBusy,
                "a request for a person is already open on this phone; wait for its answer",
            ));
        }
        let (tx, rx) = oneshot::channel();
        let id = view.request_id;
        g.insert(key.clone(), Open { view, tx });
        Ok((Waiting { book: self.clone(), key: key.clone(), id, outcome: "cancelled" }, rx))
    }
}
