//! The closure-backed [`Tool`] every device tool is (`tool(spec, adb, body)`): it binds the call to its device and
//! file cache, and runs the settle engine and the tree delta around the body of a settling tool.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value};

use super::context::Ctx;
use super::registry::{BoxFuture, Tool, ToolCall, ToolSpec};
use super::{delta, dump, settle};
use crate::device::adb::AdbBackend;
use crate::files::FileCache;
use crate::protocol::errors::{ErrorCode, ProtoError};

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
                dump::forget_not_idle(&key);
                r
            });
        };
        // Settling (tools::settle): the frame before the input, the input, then the wait for a still screen. The
        // before-frame is taken before the tool's own checks (which only read), so it is what the screen showed
        // when the call arrived.
        // `effect.tree`: when asked; unasked, wherever the phone helper reads the tree (cheap: no idle wait).
        let tree_mode = match settle.tree {
            Some(true) => Some(delta::Mode::Asked),
            Some(false) => None,
            None => {
                let sdk = crate::device::Backend::info(self.adb.as_ref(), &key).and_then(|i| i.sdk);
                self.adb.helpers().may_serve(&key, sdk, "tree").then_some(delta::Mode::Cheap)
            }
        };
        let tree_ctx = tree_mode.map(|m| (ctx.for_tree(), m));
        let channel = ctx.call.channel_id.clone();
        let body = (self.body)(ctx);
        Box::pin(async move {
            // The tree before is read alongside the frame (both before the input).
            let (before, tree_before) = match &tree_ctx {
                Some((t, mode)) => {
                    let (b, t) = tokio::join!(settle::before(&adb, &key), delta::read(t, *mode));
                    (b, Some(t))
                }
                None => (settle::before(&adb, &key).await, None),
            };
            let result = body.await;
            if side_effect {
                dump::forget_not_idle(&key);
            }
            let mut result = result?;
            let mut effect = settle::after(&adb, &key, before, settle.timeout).await;
            if let (Some((t, _)), Some(before)) = (&tree_ctx, tree_before) {
                if let Some(mut tree) = delta::after(t, before).await {
                    // The page a browser shows after the action (`effect.web: {url, title}`), read from the tree.
                    if let Some(web) = tree.as_object_mut().and_then(|m| m.remove("web")) {
                        effect["web"] = web;
                    }
                    effect["tree"] = tree;
                }
            }
            if let Some(obj) = result.as_object_mut() {
                settle::merge_tree_changed(obj, &mut effect);
                one_observation(&channel, &key, obj, &effect);
                obj.insert("effect".to_owned(), effect);
            }
            Ok(result)
        })
    }
}

/// One observation per result (issue 49): a result that found an element in a tree of its own (`android_scroll`'s
/// `until`: `element` + `observation_id`) and an `effect.tree` read after it settled would carry two ids. The
/// element is looked up in the effect's (newer) observation — same class, resource id, text and description, the
/// same bounds first — and the result names that observation and the element's index there. Not found there (it
/// moved off screen while settling): the result keeps its own.
fn one_observation(channel: &str, key: &crate::device::DeviceKey, result: &mut Map<String, Value>, effect: &Value) {
    let Some(newer) = effect["tree"]["observation_id"].as_str() else { return };
    let (Some(own), Some(found)) = (result.get("observation_id").and_then(Value::as_str), result.get("element")) else {
        return;
    };
    if own == newer {
        return;
    }
    let Ok(obs) = super::observations::recall(channel, key, newer) else { return };
    let same = |e: &Value| ["class", "resource_id", "text", "content_desc"].iter().all(|k| e.get(*k) == found.get(*k));
    let listed: Vec<Value> = obs.elements.iter().map(|e| e.to_json()).filter(|e| same(e)).collect();
    let pick = listed
        .iter()
        .find(|e| e.get("bounds") == found.get("bounds"))
        .or_else(|| (listed.len() == 1).then(|| &listed[0]))
        .cloned();
    if let Some(mut e) = pick {
        if let Some(m) = e.as_object_mut() {
            m.remove("package");
        }
        result.insert("element".to_owned(), e);
        result.insert("observation_id".to_owned(), Value::String(newer.to_owned()));
    }
}
