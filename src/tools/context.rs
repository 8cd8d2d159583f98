//! The tool context: what a device tool's body receives ([`Ctx`]: the backend, the file cache, the bound device,
//! the call) and the checks every control tool applies (coordinates inside the screen, package names). At the
//! bottom of `tools/` with the registry: every tool file names it, it names no tool file.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::registry::{ToolCall, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::DeviceKey;
use crate::files::FileCache;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// What a device tool body receives.
pub struct Ctx {
    pub adb: Arc<AdbBackend>,
    /// The transfer plane's cache: where screenshots, pulled files and large logs go, and uploads come from.
    pub files: Arc<FileCache>,
    pub device: DeviceKey,
    pub args: Map<String, Value>,
    pub spec: ToolSpec,
    pub call: ToolCall,
}

impl Ctx {
    /// A context for the connector's own reads around the tool (the tree of `effect_tree`): the same device,
    /// channel and deadline, no arguments.
    pub(super) fn for_tree(&self) -> Ctx {
        Ctx {
            adb: self.adb.clone(),
            files: self.files.clone(),
            device: self.device.clone(),
            args: Map::new(),
            spec: self.spec.clone(),
            call: ToolCall {
                channel_id: self.call.channel_id.clone(),
                binding: self.call.binding.clone(),
                args: Map::new(),
                tool_call_id: None,
                progress: self.call.progress.clone(),
                settle: None,
                deadline: self.call.deadline,
                steps: None,
            },
        }
    }

    /// The call's arguments as the tool's argument struct (see `args.rs`): already validated against the schema
    /// derived from that struct, so a failure here is a rule the schema cannot express.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, ProtoError> {
        super::args::parse(&self.args)
    }

    /// A point inside the device's screen (tool coordinates are device pixels). Returns the screen size.
    pub async fn check_point(&self, x: i64, y: i64, what: &str) -> Result<(), ProtoError> {
        let (nw, nh) = self.adb.screen_size(&self.device).await?;
        let inside = |w: u32, h: u32| x >= 0 && y >= 0 && x < w as i64 && y < h as i64;
        // `wm size` is the natural (portrait) size. A point valid in both orientations needs no more; one valid
        // only when rotated asks the device for its current rotation (rare, so the common path stays free).
        let (mut w, mut h) =
            if inside(nw, nh) && inside(nh, nw) { (nw, nh) } else { self.adb.display_size(&self.device).await? };
        if !inside(w, h) {
            // The rotation may be up to 1 s old: never refuse on a cached value, ask the phone now.
            (w, h) = self.adb.display_size_now(&self.device).await?;
        }
        if !inside(w, h) {
            return Err(invalid(format!(
                "{what} ({x}, {y}) is outside the screen: x must be 0..{} and y 0..{} (device pixels, {w}×{h} in \
                 the current orientation)",
                w - 1,
                h - 1
            )));
        }
        Ok(())
    }
}

pub fn invalid(msg: impl Into<String>) -> ProtoError {
    ProtoError::new(ErrorCode::InvalidArguments, msg)
}

/// Java package names: `com.example.app` (segments of letters, digits, `_`; at least two; first char a letter).
pub fn check_package(p: &str) -> Result<(), ProtoError> {
    let ok = p.len() <= 255
        && p.split('.').count() >= 2
        && p.split('.').all(|seg| {
            seg.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    if ok {
        Ok(())
    } else {
        Err(invalid(format!("{p:?} is not an Android package name (like com.example.app)")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_names() {
        assert!(check_package("com.android.settings").is_ok());
        assert!(check_package("com.example.app_2").is_ok());
        for bad in ["settings", "com.android.settings; reboot", "com..x", "1com.x", "com.x$(id)", "com.x y", ""] {
            assert!(check_package(bad).is_err(), "{bad}");
        }
    }
}
