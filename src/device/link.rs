//! One device as a single operation reaches it: an adb server, a serial and whether the phone speaks shell v2.
//! Below the backend (`adb.rs` hands one to each operation) and the helper (`helper.rs` starts and talks to its
//! process through one), so neither needs the other to name it.

use std::net::SocketAddr;

use super::transport::{self, FbHeader, ShellOut};
use crate::protocol::errors::ProtoError;

/// One device as an operation sees it: where to reach it and how to talk shell to it. Cheap; every call opens its
/// own connection, owned by the calling future.
#[derive(Clone, Debug)]
pub struct Device {
    server: SocketAddr,
    serial: String,
    shell_v2: bool,
}

impl Device {
    /// The handle an operation on `serial` through `server` gets (`shell_v2` read once per device by the backend).
    pub fn new(server: SocketAddr, serial: String, shell_v2: bool) -> Device {
        Device { server, serial, shell_v2 }
    }

    /// The adb server and the serial this operation reaches the phone through.
    pub fn path(&self) -> (SocketAddr, &str) {
        (self.server, &self.serial)
    }

    pub async fn shell(&self, cmd: &str) -> Result<ShellOut, ProtoError> {
        self.shell_capped(cmd, transport::SHELL_OUTPUT_MAX).await
    }

    /// [`Device::shell`] reading at most `cap` bytes of output.
    pub async fn shell_capped(&self, cmd: &str, cap: usize) -> Result<ShellOut, ProtoError> {
        if self.shell_v2 {
            transport::shell_v2(self.server, &self.serial, cmd, cap).await
        } else {
            transport::shell_v1(self.server, &self.serial, cmd, cap).await
        }
    }

    pub async fn exec(&self, cmd: &str, cap: usize) -> Result<Vec<u8>, ProtoError> {
        transport::exec(self.server, &self.serial, cmd, cap).await
    }

    pub async fn framebuffer(&self, max_pixel_bytes: usize) -> Result<(FbHeader, Vec<u8>), ProtoError> {
        transport::framebuffer(self.server, &self.serial, max_pixel_bytes).await
    }

    pub async fn sync(&self) -> Result<transport::Sync, ProtoError> {
        transport::Sync::open(self.server, &self.serial).await
    }
}
