//! Who a device is and what state it is in: the names every file of the device layer (and the channel layer above
//! it) shares.

use std::fmt;

/// A device is identified by the adb server that sees it plus its serial: one connector may front the adb servers
/// of several boxes, and two boxes may see devices with equal serials.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceKey {
    pub server: String,
    pub serial: String,
}

impl fmt::Display for DeviceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.serial, self.server)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceState {
    Online,
    Offline,
    /// The phone has not accepted this host's RSA key ("Allow USB debugging?").
    Unauthorized,
    /// The adb server no longer lists it.
    Gone,
}

impl DeviceState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Online => "online",
            Self::Offline => "offline",
            Self::Unauthorized => "unauthorized",
            Self::Gone => "gone",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    pub key: DeviceKey,
    pub state: DeviceState,
    /// Display-level model name (descriptor `target.display_name`), e.g. "Pixel 7".
    pub model: String,
    /// `ro.product.manufacturer` and `ro.build.version.sdk`, learnt when the device is verified (empty / `None`
    /// before that): what device matching at bind compares (`channels/matching.rs`).
    pub manufacturer: String,
    pub sdk: Option<u32>,
}

/// How long an adb server's tracker must stay without a connection before the server counts as unreachable
/// (`/health` degraded, `xagent_adb_server_up` 0). `adb kill-server; adb start-server` or a restart of
/// `adb-server.service` takes 1-3 s and the tracker retries every second, so a restart never shows; a server
/// that stays down shows within this time plus a second.
pub const UNREACHABLE_AFTER: std::time::Duration = std::time::Duration::from_secs(10);
