//! `cmd uimode` of the simulated phone: `night [yes|no|auto|custom_schedule|custom_bedtime]`, as AOSP
//! `UiModeManagerService.Shell` answers it (`Night mode: yes` after reading or setting; exit 255 = -1 with its
//! error text otherwise). The mode lives where Android keeps it, `secure ui_night_mode` (0 auto, 1 no, 2 yes,
//! 3 custom), so a test reads it like any setting.

use crate::sim::cmdio::CmdIo;
use crate::sim::device::Device;

const KEY: (&str, &str) = ("secure", "ui_night_mode");

fn name(v: Option<&str>, custom: Option<&str>) -> &'static str {
    match v {
        Some("0") => "auto",
        // Android's own default: no night mode unless set.
        Some("1") | None => "no",
        Some("2") => "yes",
        Some("3") if custom == Some("1") => "custom_bedtime",
        Some("3") => "custom_schedule",
        _ => "unknown",
    }
}

pub fn uimode(dev: &mut Device, args: &[&str], io: &mut CmdIo) -> i32 {
    let get = |dev: &Device, k: &str| dev.settings.get(&("secure".to_string(), k.to_string())).cloned();
    match args {
        ["night"] => {}
        ["night", mode] => {
            let (v, custom) = match *mode {
                "auto" => ("0", None),
                "no" => ("1", None),
                "yes" => ("2", None),
                "custom_schedule" => ("3", Some("0")),
                "custom_bedtime" => ("3", Some("1")),
                _ => {
                    io.err("Error: mode must be 'yes', 'no', or 'auto', or 'custom_schedule', or 'custom_bedtime'\n");
                    return 255;
                }
            };
            dev.settings.insert((KEY.0.to_string(), KEY.1.to_string()), v.to_string());
            if let Some(c) = custom {
                dev.settings.insert(("secure".to_string(), "ui_night_mode_custom_type".to_string()), c.to_string());
            }
        }
        _ => {
            io.err("UiModeManager service (uimode) commands:\n  help\n  night [yes|no|auto|custom_schedule|custom_bedtime]\n");
            return 255;
        }
    }
    let now = name(get(dev, KEY.1).as_deref(), get(dev, "ui_night_mode_custom_type").as_deref());
    io.out(&format!("Night mode: {now}\n"));
    0
}
