//! Shared plumbing of the device tools: a closure-backed [`Tool`], argument readers, and the checks every control
//! tool applies (coordinates inside the screen, package names, tags).

use std::future::Future;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use super::{settle, BoxFuture, Tool, ToolCall, ToolSpec};
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

type Body = dyn Fn(Ctx) -> BoxFuture<Result<Value, ProtoError>> + Send + Sync;

/// A tool whose behaviour is an async function of [`Ctx`]; keeps each tool file to its spec and its logic.
pub struct DeviceTool {
    spec: ToolSpec,
    adb: Arc<AdbBackend>,
    /// Attached once when the registry joins the running server ([`Tool::attach_files`]); the family constructors
    /// only take the backend, so the card can be built (`card` command, tests) without a cache on disk.
    files: OnceLock<Arc<FileCache>>,
    body: Box<Body>,
}

pub fn tool<F, Fut>(spec: ToolSpec, adb: &Arc<AdbBackend>, body: F) -> Arc<dyn Tool>
where
    F: Fn(Ctx) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Value, ProtoError>> + Send + 'static,
{
    Arc::new(DeviceTool { spec, adb: adb.clone(), files: OnceLock::new(), body: Box::new(move |c| Box::pin(body(c))) })
}

impl Tool for DeviceTool {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn attach_files(&self, files: &Arc<FileCache>) {
        let _ = self.files.set(files.clone());
    }

    fn call(&self, call: ToolCall) -> BoxFuture<Result<Value, ProtoError>> {
        let Some(device) = call.binding.clone() else {
            return Box::pin(async {
                Err(ProtoError::new(ErrorCode::ConnectionNotAuthenticated, "no device is bound to this channel"))
            });
        };
        let Some(files) = self.files.get().cloned() else {
            return Box::pin(async {
                Err(ProtoError::new(ErrorCode::Internal, "the tool registry was started without a file cache"))
            });
        };
        let settle = call.settle.filter(|s| self.spec.settles && s.settle);
        let (adb, key) = (self.adb.clone(), device.clone());
        let side_effect = self.spec.side_effect;
        let ctx = Ctx { adb: self.adb.clone(), files, device, args: call.args.clone(), spec: self.spec.clone(), call };
        let Some(settle) = settle else {
            let body = (self.body)(ctx);
            if !side_effect {
                return body;
            }
            return Box::pin(async move {
                let mut r = body.await;
                // No settle, no `effect`: the tool's tree-change note goes nowhere.
                if let Ok(Value::Object(m)) = &mut r {
                    m.remove(settle::TREE_CHANGED);
                }
                // The agent acted on the screen: what the UI tree's memory says of it may be out of date.
                super::ui::forget_not_idle(&key);
                r
            });
        };
        // Settling (tools::settle): the frame before the input, the input, then the wait for a still screen. The
        // before-frame is taken before the tool's own checks (which only read), so it is what the screen showed
        // when the call arrived.
        // `effect.tree`: when asked; unasked, wherever the phone helper reads the tree (cheap: no idle wait).
        let tree_mode = match settle.tree {
            Some(true) => Some(super::delta::Mode::Asked),
            Some(false) => None,
            None => {
                let sdk = crate::device::Backend::info(self.adb.as_ref(), &key).and_then(|i| i.sdk);
                self.adb.helpers().may_serve(&key, sdk, "tree").then_some(super::delta::Mode::Cheap)
            }
        };
        let tree_ctx = tree_mode.map(|m| (ctx.for_tree(), m));
        let body = (self.body)(ctx);
        Box::pin(async move {
            // The tree before is read alongside the frame (both before the input).
            let (before, tree_before) = match &tree_ctx {
                Some((t, mode)) => {
                    let (b, t) = tokio::join!(settle::before(&adb, &key), super::delta::read(t, *mode));
                    (b, Some(t))
                }
                None => (settle::before(&adb, &key).await, None),
            };
            let result = body.await;
            if side_effect {
                super::ui::forget_not_idle(&key);
            }
            let mut result = result?;
            let mut effect = settle::after(&adb, &key, before, settle.timeout).await;
            if let (Some((t, _)), Some(before)) = (&tree_ctx, tree_before) {
                if let Some(tree) = super::delta::after(t, before).await {
                    effect["tree"] = tree;
                }
            }
            if let Some(obj) = result.as_object_mut() {
                settle::merge_tree_changed(obj, &mut effect);
                obj.insert("effect".to_owned(), effect);
            }
            Ok(result)
        })
    }
}

impl Ctx {
    /// A context for the connector's own reads around the tool (the tree of `effect_tree`): the same device,
    /// channel and deadline, no arguments.
    fn for_tree(&self) -> Ctx {
        Ctx {
            adb: self.adb.clone(),
            files: self.files.clone(),
            device: self.device.clone(),
            args: Map::new(),
            spec: self.spec.clone(),
            call: super::ToolCall {
                channel_id: self.call.channel_id.clone(),
                binding: self.call.binding.clone(),
                args: Map::new(),
                tool_call_id: None,
                progress: self.call.progress.clone(),
                settle: None,
                deadline: self.call.deadline,
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
