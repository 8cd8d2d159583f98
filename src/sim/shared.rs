//! What every connection, stream and service of one simulated phone shares: the phone itself (behind one mutex),
//! the fault and kill switches, the stall patterns and the USB link.

use std::sync::Mutex;

use tokio::sync::watch;

use super::costs::Link;
use super::device::Device;
use super::state::{Fault, SimConfig};

/// State shared by the accept loop, every connection and every service task.
pub(crate) struct Shared {
    pub(crate) device: Mutex<Device>,
    pub(crate) fault: watch::Sender<Fault>,
    /// Bumped to make every live connection close (drop/offline/shutdown/reboot).
    pub(crate) kill: watch::Sender<u64>,
    pub(crate) cfg: SimConfig,
    pub(crate) stalls: Mutex<Stalls>,
    /// Bumped whenever a stall pattern is released.
    pub(crate) stall_release: watch::Sender<u64>,
    /// Transport connections accepted so far (an adb server's reconnect shows as one more).
    pub(crate) transports: std::sync::atomic::AtomicU64,
    /// Streams (service requests: shell, exec, sync, framebuffer, …) opened so far: each is a USB round trip.
    pub(crate) streams: std::sync::atomic::AtomicU64,
    /// The device-to-host link (paced at `cfg.costs.link_bytes_per_s`).
    pub(crate) link: Link,
}

/// The per-command stall fault (see [`SimPhone::stall`]).
#[derive(Default)]
pub(crate) struct Stalls {
    /// Active patterns: a command (or `framebuffer:`, `sync:SEND PATH`, ...) starting with one of them is held.
    pub(crate) patterns: Vec<String>,
    /// Commands held right now.
    pub(crate) held: Vec<String>,
    /// Held commands whose stream the host closed (adbd would SIGHUP them), oldest first.
    pub(crate) hung_up: Vec<String>,
}
