//! `android_device_status`: what the phone is and what it is doing (model, Android version, screen, battery,
//! foreground app). Pure observation.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::device::tool;
use super::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::Backend;

/// `key: value` / `key=value` lines of `dumpsys battery`.
fn battery(text: &str) -> Value {
    let get = |k: &str| {
        text.lines().find_map(|l| {
            let (a, b) = l.trim().split_once(':')?;
            (a.trim() == k).then(|| b.trim().to_owned())
        })
    };
    let level = get("level").and_then(|v| v.parse::<i64>().ok());
    let plugged = ["AC powered", "USB powered", "Wireless powered"].iter().any(|k| get(k).as_deref() == Some("true"));
    // `status` is BatteryManager.BATTERY_STATUS_*: plugged in is not the same as charging (a full or an
    // overheated battery is plugged but not charging), so the profile's `charging` comes from here.
    let status = match get("status").and_then(|v| v.parse::<i64>().ok()) {
        Some(2) => "charging",
        Some(3) => "discharging",
        Some(4) => "not_charging",
        Some(5) => "full",
        _ => "unknown",
    };
    json!({"level": level, "plugged": plugged, "charging": status == "charging", "status": status})
}

/// `mCurrentFocus=Window{… u0 com.pkg/com.pkg.Activity}` → ("com.pkg", "com.pkg.Activity").
pub fn foreground(text: &str) -> Option<(String, String)> {
    let line = text.lines().find(|l| l.contains("mCurrentFocus=") || l.contains("mFocusedApp="))?;
    let comp = line.split_whitespace().find(|w| w.contains('/'))?.trim_end_matches('}');
    let (pkg, act) = comp.split_once('/')?;
    let act = if let Some(rest) = act.strip_prefix('.') { format!("{pkg}.{rest}") } else { act.to_owned() };
    Some((pkg.to_owned(), act))
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: "android_device_status",
            title: "Phone status",
            description: "Model, manufacturer, Android version, screen size and density (the coordinate space of \
                          every tap), orientation, battery, the app in the foreground, whether the screen is on \
                          and locked, and the adb state.",
            input: json!({"type": "object", "additionalProperties": false, "properties": {}}),
            output: json!({"type": "object", "required": ["model", "android_version", "screen_width", "screen_height"], "properties": {
                "model": {"type": "string"}, "manufacturer": {"type": "string"}, "android_version": {"type": "string"},
                "sdk": {"type": ["integer", "null"]}, "screen_width": {"type": "integer"}, "screen_height": {"type": "integer"},
                "density": {"type": ["integer", "null"]}, "orientation": {"type": "string", "enum": ["portrait", "landscape"]},
                "rotation": {"type": ["integer", "null"], "description": "0-3 quarter turns from natural, when known; screen_width/height are already in this orientation"},
                "battery": {"type": "object"}, "adb_state": {"type": "string"},
                "foreground_package": {"type": "string"}, "foreground_activity": {"type": "string"},
                "screen_on": {"type": ["boolean", "null"], "description": "The display is on (null: the phone does not say)"},
                "locked": {"type": ["boolean", "null"], "description": "The lock screen is showing (android_unlock)"},
                "lock_secure": {"type": ["boolean", "null"], "description": "The lock needs a PIN, pattern or password, when the phone says"}}}),
            side_effect: false,
            deadline: Duration::from_secs(15),
        },
        adb,
        |c| async move {
            let d = c.spec.deadline;
            let props = c
                .adb
                .shell_ok(&c.device, "getprop ro.product.model; getprop ro.product.manufacturer; getprop ro.build.version.release; getprop ro.build.version.sdk", false, d)
                .await?;
            let mut p = props.lines().map(str::trim);
            let (model, manufacturer, release, sdk) = (p.next(), p.next(), p.next(), p.next());
            let (w, h) = c.adb.screen_size(&c.device).await?;
            let density = c.adb.shell_ok(&c.device, "wm density", false, d).await?;
            let density = density.lines().rev().find_map(|l| l.rsplit(':').next()?.trim().parse::<i64>().ok());
            let bat = c.adb.shell_ok(&c.device, "dumpsys battery", false, d).await?;
            let win = c
                .adb
                .shell_ok(&c.device, "dumpsys window windows | grep -E 'mCurrentFocus|mFocusedApp'", false, d)
                .await
                .unwrap_or_default();
            // `wm size` is the natural (unrotated) size; the touch mapper knows the current rotation.
            let rotation = c.adb.rotation(&c.device).await.ok();
            let orientation = match rotation {
                Some(1 | 3) => "landscape",
                _ => "portrait",
            };
            let (w, h) = if rotation.is_some_and(|r| r % 2 == 1) { (h, w) } else { (w, h) };
            let adb_state = c.adb.info(&c.device).map_or("gone", |d| d.state.as_str());
            let power = c.adb.screen_state(&c.device).await.unwrap_or_default();
            let mut r = json!({
                "orientation": orientation, "rotation": rotation, "adb_state": adb_state,
                "model": model.unwrap_or(""), "manufacturer": manufacturer.unwrap_or(""),
                "android_version": release.unwrap_or(""), "sdk": sdk.and_then(|s| s.parse::<i64>().ok()),
                "screen_width": w, "screen_height": h, "density": density, "battery": battery(&bat),
                "screen_on": power.screen_on, "locked": power.locked, "lock_secure": power.secure,
            });
            if let Some((pkg, act)) = foreground(&win) {
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
    fn parses_battery_and_focus() {
        let b = battery(
            "Current Battery Service state:\n  AC powered: false\n  USB powered: true\n  status: 2\n  level: 87\n",
        );
        assert_eq!(b, json!({"level": 87, "plugged": true, "charging": true, "status": "charging"}));
        let full = battery("  AC powered: true\n  status: 5\n  level: 100\n");
        assert_eq!(full, json!({"level": 100, "plugged": true, "charging": false, "status": "full"}));
        let off = battery("  USB powered: false\n  status: 3\n  level: 40\n");
        assert_eq!(off["charging"], false);
        assert_eq!(battery("level: 1")["status"], "unknown");
        let f = foreground("  mCurrentFocus=Window{1f2e3d u0 com.android.settings/.Settings}\n");
        assert_eq!(f, Some(("com.android.settings".into(), "com.android.settings.Settings".into())));
        assert_eq!(foreground("nothing"), None);
    }
}
