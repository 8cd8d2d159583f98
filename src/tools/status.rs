//! `android_device_status`: what the phone is and what it is doing (model, Android version, screen, battery,
//! foreground app). Pure observation.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::device::tool;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::Backend;
use crate::device::{formats, text};

fn battery(text: &str) -> Value {
    let b = formats::battery(text);
    json!({"level": b.level, "plugged": b.plugged, "charging": b.status == "charging", "status": b.status})
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: "android_device_status",
            title: "Phone status",
            description: "Model, Android version, screen size in device px (the space of all coordinates), \
                          battery, foreground app, screen on, locked.",
            input: super::args::schema::<super::args::NoArgs>(),
            output: json!({"type": "object", "properties": {
                "model": {"type": "string"}, "manufacturer": {"type": "string"}, "android_version": {"type": "string"},
                "sdk": {"type": ["integer", "null"]}, "screen_width": {"type": "integer"}, "screen_height": {"type": "integer"},
                "density": {"type": ["integer", "null"]}, "orientation": {"type": "string", "enum": ["portrait", "landscape"]},
                "rotation": {"type": ["integer", "null"]},
                "rotation_degrees": {"type": ["integer", "null"], "enum": [0, 90, 180, 270, null]},
                "battery": {"type": "object"}, "adb_state": {"type": "string"},
                "foreground_package": {"type": "string"}, "foreground_activity": {"type": "string"},
                "screen_on": {"type": ["boolean", "null"]},
                "locked": {"type": ["boolean", "null"]},
                "lock_secure": {"type": ["boolean", "null"], "description": "Needs a PIN, pattern or password"},
                "unicode_input": {"type": "boolean", "description": "Non-ASCII can be typed (helper paste or ADB Keyboard)"},
                "phone_helper": {"type": "object", "description": "Phone helper: state, version, fell_back (operations on \
                    the shell path and why), injection (ok, refused, unverified, untested), attention (what the \
                    operator should do: {problem, message, action})"}}}),
            side_effect: false,
            settles: false,
            deadline: Duration::from_secs(15),
        },
        adb,
        |c| async move {
            let d = c.spec.deadline;
            let props = c
                .adb
                .shell_ok(&c.device, "getprop ro.product.model; getprop ro.product.manufacturer; getprop ro.build.version.release; getprop ro.build.version.sdk; ime list -s 2>/dev/null; true", false, d)
                .await?;
            // A phone says what it likes here: printable, no bidi controls, bounded (device::text), as everywhere
            // a phone's string enters.
            let mut lines = props.lines();
            let mut next = |max| lines.next().map(|l| text::phone_text(l, max));
            let (model, manufacturer) = (next(text::MAX_NAME_CHARS), next(text::MAX_NAME_CHARS));
            let (release, sdk) = (next(text::MAX_SHORT_CHARS), next(text::MAX_SHORT_CHARS));
            let rest: Vec<&str> = lines.collect();
            let unicode_input = formats::ime_listed(&rest.join("\n"), crate::tools::keyboard::ADB_KEYBOARD);
            let (w, h) = c.adb.screen_size(&c.device).await?;
            let density = c.adb.shell_ok(&c.device, "wm density", false, d).await?;
            let density = density.lines().rev().find_map(|l| l.rsplit(':').next()?.trim().parse::<i64>().ok());
            let bat = c.adb.shell_ok(&c.device, "dumpsys battery", false, d).await?;
            let sdk_n = sdk.as_deref().and_then(|s| s.parse::<u32>().ok());
            let win = c
                .adb
                .shell(&c.device, &formats::foreground_command(sdk_n), false, d)
                .await
                .map(|o| o.stdout)
                .unwrap_or_default();
            // `wm size` is the natural (unrotated) size; the touch mapper knows the current rotation. Read now,
            // never from the 1 s cache: this is the call an agent makes to learn the phone's state after a turn.
            let rotation = c.adb.rotation_now(&c.device).await.ok();
            let orientation = match rotation {
                Some(1 | 3) => "landscape",
                _ => "portrait",
            };
            let (w, h) = if rotation.is_some_and(|r| r % 2 == 1) { (h, w) } else { (w, h) };
            let adb_state = c.adb.info(&c.device).map_or("gone", |d| d.state.as_str());
            // The screen state read now too, not the 1 s cache (issue 48: a phone locked a moment ago said
            // `locked: false`); the fresh reading is kept for the next caller.
            c.adb.forget_screen_state(&c.device);
            let power = c.adb.screen_state(&c.device).await.unwrap_or_default();
            // Read after the screen state, which starts the helper on a phone that has not used it yet.
            let helper = c.adb.helpers().report(&c.device);
            let fell_back = |op: &str| helper["fell_back"].get(op).is_some();
            let paste = helper["state"] == "running" && helper["operations"]["paste"] == "ok";
            let unicode_input = unicode_input || (paste && !fell_back("paste") && !fell_back("text"));
            let mut r = json!({
                "orientation": orientation, "rotation": rotation, "adb_state": adb_state,
                "rotation_degrees": rotation.map(|r| u16::from(r) * 90),
                "model": model.unwrap_or_default(), "manufacturer": manufacturer.unwrap_or_default(),
                "android_version": release.unwrap_or_default(), "sdk": sdk.and_then(|s| s.parse::<i64>().ok()),
                "screen_width": w, "screen_height": h, "density": density, "battery": battery(&bat),
                "screen_on": power.screen_on, "locked": power.locked, "lock_secure": power.secure,
                "unicode_input": unicode_input, "phone_helper": helper,
            });
            if let Some((pkg, act)) = formats::foreground(&win) {
                r["foreground_package"] = json!(pkg);
                r["foreground_activity"] = json!(act);
            }
            Ok(r)
        },
    )]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn battery_json() {
        let b = battery(
            "Current Battery Service state:\n  AC powered: false\n  USB powered: true\n  status: 2\n  level: 87\n",
        );
        assert_eq!(b, json!({"level": 87, "plugged": true, "charging": true, "status": "charging"}));
        let full = battery("  AC powered: true\n  status: 5\n  level: 100\n");
        assert_eq!(full, json!({"level": 100, "plugged": true, "charging": false, "status": "full"}));
        assert_eq!(battery("level: 1")["status"], "unknown");
    }
}
