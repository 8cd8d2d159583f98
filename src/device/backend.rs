//! The device side as the connector core sees it: a [`Backend`] that knows which devices exist, in which state,
//! and tells when that changes.

use tokio::sync::broadcast;

use super::health;
use super::key::{DeviceInfo, DeviceKey};
use crate::protocol::card::AuthFlow;

/// What the channel layer needs from the device layer.
pub trait Backend: Send + Sync + 'static {
    /// The card's `auth_flows` (device binding).
    fn auth_flows(&self) -> Vec<AuthFlow>;
    /// Current snapshot of all known devices (the channel layer applies the operator's allowlist).
    fn devices(&self) -> Vec<DeviceInfo>;
    /// Every state change of a device is announced here.
    fn subscribe(&self) -> broadcast::Receiver<DeviceKey>;
    /// A channel released the device (logout, lease expiry): stop per-device work that only it needed, and undo
    /// the lease's conditions (`conditions.rs`, in the background).
    fn released(&self, _key: &DeviceKey) {}

    /// A binding is ending with a call cut that may have sent the phone input (`channels::work`): stop what the
    /// phone may still be playing (a gesture the phone helper is injecting) and return once nothing of it can
    /// still arrive. Awaited before the phone is given back.
    fn cut(self: std::sync::Arc<Self>, _key: DeviceKey) -> futures_util::future::BoxFuture<'static, ()> {
        Box::pin(async {})
    }

    /// As [`Backend::cut`], for an operator's takeover (issue 47): `sent` is asked once the phone's order slot is
    /// ours — every stopped call has let go of the phone by then, so what it says is final — and the phone's
    /// in-flight input is stopped only if it says some input may have been sent.
    fn cut_if(
        self: std::sync::Arc<Self>,
        key: DeviceKey,
        sent: Box<dyn Fn() -> bool + Send + Sync>,
    ) -> futures_util::future::BoxFuture<'static, ()> {
        if sent() {
            self.cut(key)
        } else {
            Box::pin(async {})
        }
    }

    /// Makes the phone ready for a new lease (the policy's lease conditions, recorded then set): awaited before a
    /// bind's answer reaches the agent, so its first call sees the clean phone. An error means the phone is not
    /// ready; the caller unbinds it.
    fn prepare(
        self: std::sync::Arc<Self>,
        _key: DeviceKey,
    ) -> futures_util::future::BoxFuture<'static, Result<(), crate::protocol::errors::ProtoError>> {
        Box::pin(async { Ok(()) })
    }

    /// Checks the lease conditions an agent's `auth.start` asks for (`input.conditions`; `None`: none) against the
    /// operator's policy, and with the phone being bound keeps them for its [`Backend::prepare`]. An error is the
    /// reason for the agent; nothing is bound.
    fn ask_conditions(&self, _key: Option<&DeviceKey>, asked: Option<&serde_json::Value>) -> Result<(), String> {
        match asked {
            None => Ok(()),
            Some(_) => Err("this connector sets no lease conditions; auth.start input.conditions is not taken".into()),
        }
    }

    /// Why the phone may not be handed to an agent now (its last lease's settings are not restored), if so.
    fn not_restored(&self, _key: &DeviceKey) -> Option<String> {
        None
    }

    /// What the phone's last release put back (`reset`) and what it could not (`not_reset`, each with why), for
    /// the next bind's answer; `None` for backends that reset nothing.
    fn lease_report(&self, _key: &DeviceKey) -> Option<(Vec<String>, Vec<String>)> {
        None
    }

    /// A binding restored at start-up holds `key`: its lease (and the conditions recorded for it) continue.
    fn lease_continues(&self, _key: &DeviceKey) {}
    /// Starts background work (device tracking) that runs until `shutdown` flips.
    fn start(self: std::sync::Arc<Self>, _shutdown: tokio::sync::watch::Receiver<bool>) {}

    fn info(&self, key: &DeviceKey) -> Option<DeviceInfo> {
        self.devices().into_iter().find(|d| &d.key == key)
    }

    /// The device a serial belongs to when it is a second path (USB + Wi-Fi) to a phone listed under another key.
    fn resolve_serial(&self, _serial: &str) -> Option<DeviceKey> {
        None
    }

    /// Every serial the device presented as `key` goes by (its other paths, its own serial), for the allowlist.
    fn aliases(&self, key: &DeviceKey) -> Vec<String> {
        vec![key.serial.clone()]
    }

    /// A binding restored at start-up names `key`: if it is one of several paths of a phone, list the phone
    /// under this key (called before [`Backend::start`]).
    fn keep_key(&self, _key: &DeviceKey) {}

    /// True while the device list may still change to online by itself soon: an adb server's first list has not
    /// arrived yet, or a listed device is being verified. A binding that finds no online device waits (bounded).
    fn settling(&self) -> bool {
        false
    }

    /// Every configured adb server (`host:port`, in configuration order) with how long it has been without a
    /// tracker connection (`None`: connected, or not tried yet). Empty for backends without adb servers.
    fn adb_servers(&self) -> Vec<(String, Option<std::time::Duration>)> {
        Vec::new()
    }

    /// How many side-effecting (ordered) operations were ever started on the phone, or `None` when this backend
    /// does not count them. The same before and after a tool call = the call sent the phone nothing that changes
    /// it (issue 36: such a call is audited as a count, `audit::reads`). Another call's side effect on the phone
    /// in the meantime also moves it: the call is then recorded one by one, which is the safe side.
    fn side_effects_started(&self, _key: &DeviceKey) -> Option<u64> {
        None
    }

    /// A tool call on the device ran into its deadline (its device operation was dropped before it could tell):
    /// one more timeout in a row for the recovery ladder.
    fn command_timed_out(&self, _key: &DeviceKey) {}

    /// Every phone's health as last read (battery, storage, uptime, disconnects, recovery state) with the warnings
    /// it raises under the operator's thresholds. Empty for backends without phones.
    fn health(&self) -> Vec<(DeviceKey, health::Snapshot, Vec<health::Warning>)> {
        Vec::new()
    }

    /// The phone's resident helper in one line for people (the wall, `doctor` through `/health`): running, or why
    /// it uses the shell path. `None` for backends without helpers.
    fn phone_helper(&self, _key: &DeviceKey) -> Option<String> {
        None
    }

    /// What the operator should do about the phone's helper (issue 46 item 5): `{problem, message, action}` items
    /// — injection refused (where Xiaomi's toggle is), typed text unverified, the helper down, operations on the
    /// shell path and why. Empty when there is nothing to say, and for backends without helpers.
    fn phone_helper_attention(&self, _key: &DeviceKey) -> Vec<serde_json::Value> {
        Vec::new()
    }

    /// One phone's entry of [`Backend::health`] (the devices API asks per phone).
    fn health_of(&self, key: &DeviceKey) -> Option<(health::Snapshot, Vec<health::Warning>)> {
        self.health().into_iter().find(|(k, _, _)| k == key).map(|(_, s, w)| (s, w))
    }
}

/// A backend without devices: no auth flow, nothing to bind. Used where no device layer is configured.
pub struct NoDevices {
    tx: broadcast::Sender<DeviceKey>,
}

impl Default for NoDevices {
    fn default() -> Self {
        Self { tx: broadcast::channel(1).0 }
    }
}

impl Backend for NoDevices {
    fn auth_flows(&self) -> Vec<AuthFlow> {
        Vec::new()
    }
    fn devices(&self) -> Vec<DeviceInfo> {
        Vec::new()
    }
    fn subscribe(&self) -> broadcast::Receiver<DeviceKey> {
        self.tx.subscribe()
    }
}
