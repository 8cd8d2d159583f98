//! `android_screenshot`: captures the bound phone's screen, scales and encodes it on the host, and stores it in the
//! transfer plane's cache. The image never travels on the WebSocket: the result carries a `file_ref` and a one-time
//! `download_url` (device profile, "Files (MUST)"). The pixels are `crate::pixels`'s: capture paths (and why the
//! default is the one it is), the downscale, the encoders.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::args;
use super::device::tool;
use super::picture::{frame_verdict, quality_80, screen_on_for, side_1280, MAX_SIDE_ARG};
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::files::{self, NewFile};
use crate::pixels::capture::{capture, CapturePath, DEFAULT_PATH};
use crate::pixels::encode::{encode, Format};
use crate::protocol::errors::{ErrorCode, ProtoError};

// Serialize: schemars writes a field's `default` only for a type it can serialize.
#[derive(Clone, Copy, Default, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum ImageFormat {
    #[default]
    Jpeg,
    Png,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ScreenshotArgs {
    #[serde(default)]
    format: ImageFormat,
    /// Longest side in px (downscaled); 0 = full size
    #[schemars(range(min = 0, max = MAX_SIDE_ARG))]
    #[serde(default = "side_1280")]
    max_side: u32,
    #[schemars(range(min = 1, max = 100))]
    #[serde(default = "quality_80")]
    quality: u8,
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: "android_screenshot",
            title: "Take a screenshot",
            description: "The screen as an image file (one-time URL). Divide image coordinates by `scale` to \
                          tap.",
            input: args::schema::<ScreenshotArgs>(),
            output: json!({"type": "object", "properties": {
                    "files": {"type": "array", "items": files::file_item_schema()},
                    "width": {"type": "integer"}, "height": {"type": "integer"},
                    "screen_width": {"type": "integer"}, "screen_height": {"type": "integer"},
                    "scale": {"type": "number"},
                    "screen_on": {"type": ["boolean", "null"], "description": "false: asleep, black picture"},
                    "frame": {"type": "string", "enum": ["ok", "screen_off", "secure_window", "blank"]},
                    "frame_blank": {"type": "boolean", "description": "frame is secure_window or blank"},
                    "hint": {"type": "string"}}}),
            side_effect: false,
            settles: false,
            deadline: Duration::from_secs(30),
        },
        adb,
        |c| async move {
            let a: ScreenshotArgs = c.parse()?;
            let format = match a.format {
                ImageFormat::Jpeg => Format::Jpeg { quality: a.quality.clamp(1, 100) },
                ImageFormat::Png => Format::Png,
            };
            let max_side = a.max_side.min(MAX_SIDE_ARG);
            let (screen_w, screen_h) = c.adb.screen_size(&c.device).await?;
            let _permit = super::permits::captures().acquire(&c.device).await?;
            let frame = match capture(&c.adb, &c.device, DEFAULT_PATH, max_side, c.spec.deadline).await {
                Ok(f) => f,
                // A device that did not answer in time will not answer a second request either.
                Err(e) if e.code == ErrorCode::DeviceTimeout => return Err(e),
                Err(e) => {
                    tracing::debug!(error = %e, "framebuffer capture failed; falling back to raw screencap");
                    capture(&c.adb, &c.device, CapturePath::Raw, max_side, c.spec.deadline).await?
                }
            };
            let (ext, mime) = match format {
                Format::Jpeg { .. } => ("jpg", "image/jpeg"),
                Format::Png => ("png", "image/png"),
            };
            let meta = NewFile {
                channel_id: c.call.channel_id.clone(),
                filename: format!("screenshot-{}.{ext}", crate::protocol::now_ms()),
                mime: mime.into(),
            };
            // The frame is captured in the display's current (rotated) space and `wm size` is the natural one: a
            // landscape frame turns the size with it, at no extra round trip, so the numbers always match the image.
            let (fw, fh) = frame.picture.dimensions();
            let (screen_w, screen_h) = if (fw > fh) != (screen_w > screen_h) && fw != fh && screen_w != screen_h {
                (screen_h, screen_w)
            } else {
                (screen_w, screen_h)
            };
            let cache = c.files.clone();
            let (row, w, h, uniform) = tokio::task::spawn_blocking(move || {
                let uniform = frame.picture.uniform_colour();
                let (bytes, w, h) = encode(&frame.picture.fit(max_side), format)?;
                let row = cache.store_bytes(&bytes, meta).map_err(|e| e.into_proto("the screenshot"))?;
                Ok::<_, ProtoError>((row, w, h, uniform))
            })
            .await
            .map_err(|_| ProtoError::new(ErrorCode::Internal, "screenshot encoding failed unexpectedly"))??;
            let screen_on = screen_on_for(&c, uniform.is_some()).await;
            // Orientation-agnostic: the long sides correspond whether the phone is in portrait or landscape.
            let scale = f64::from(w.max(h)) / f64::from(screen_w.max(screen_h).max(1));
            let mut out = json!({
                "files": [files::describe(&row)],
                "width": w, "height": h,
                "screen_width": screen_w, "screen_height": screen_h,
                "scale": (scale * 10_000.0).round() / 10_000.0,
                "screen_on": screen_on,
            });
            let frame = frame_verdict(&c, uniform, screen_on).await;
            out["frame"] = json!(frame.as_str());
            out["frame_blank"] = json!(frame.blank());
            if let Some(hint) = frame.hint() {
                out["hint"] = json!(hint);
            }
            Ok(out)
        },
    )]
}
