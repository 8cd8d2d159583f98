//! `settings get|put|delete|list NAMESPACE …` (system, secure, global; `null` for an unset key, `Deleted N rows`),
//! and the display's rotation as the window manager derives it from two settings (AOSP `DisplayRotation`'s settings
//! observer): with `accelerometer_rotation` 1 (auto-rotate) the sensor decides and `user_rotation` is ignored — the
//! simulated phone stands upright, so the display is in its natural orientation (a real report: a write of
//! `user_rotation` 1 on a phone whose `accelerometer_rotation` read `1` left the panel portrait,
//! tests/fixtures/real/settings-get-rotation-pair-detour-report.txt); with it 0 (or unset) the display turns to
//! `user_rotation` (unset: 0) at once.

use crate::sim::cmdio::CmdIo;
use crate::sim::device::Device;

pub(super) fn settings(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let args: Vec<&str> = {
        let mut v = Vec::new();
        let mut i = 0;
        while i < args.len() {
            if args[i] == "--user" {
                i += 2;
                continue;
            }
            v.push(args[i]);
            i += 1;
        }
        v
    };
    let valid_ns = |ns: &str| ["system", "secure", "global"].contains(&ns);
    match args.as_slice() {
        ["get", ns, key] if valid_ns(ns) => {
            let v = dev.settings.get(&(ns.to_string(), key.to_string())).cloned().unwrap_or_else(|| "null".into());
            io.out(&format!("{v}\n"));
            0
        }
        ["put", ns, key, val, ..] if valid_ns(ns) => {
            dev.settings.insert((ns.to_string(), key.to_string()), val.to_string());
            turn(dev);
            0
        }
        ["delete", ns, key] if valid_ns(ns) => {
            let n = dev.settings.remove(&(ns.to_string(), key.to_string())).map(|_| 1).unwrap_or(0);
            turn(dev);
            io.out(&format!("Deleted {n} rows\n"));
            0
        }
        ["list", ns] if valid_ns(ns) => {
            for ((n, k), v) in &dev.settings {
                if n == ns {
                    io.out(&format!("{k}={v}\n"));
                }
            }
            0
        }
        _ => {
            io.err("Invalid command: settings\nusage:  settings [--user <USER_ID> | current] get namespace key\n");
            1
        }
    }
}

/// The display's rotation from `accelerometer_rotation` and `user_rotation` (see the module's comment).
fn turn(dev: &mut Device) {
    let get = |k: &str| dev.settings.get(&("system".to_string(), k.to_string())).map(String::as_str);
    let auto = get("accelerometer_rotation") == Some("1");
    // The sensor of a phone standing upright: its natural orientation.
    let sensor = 0;
    dev.ui.rotation =
        if auto { sensor } else { get("user_rotation").and_then(|v| v.parse::<u8>().ok()).map_or(0, |r| r % 4) };
}
