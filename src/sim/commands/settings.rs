//! `settings get|put|delete|list NAMESPACE …` (system, secure, global; `null` for an unset key, `Deleted N rows`),
//! and the display's rotation that `settings put system user_rotation N` turns at once (auto-rotate is off).

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
            if (*ns, *key) == ("system", "user_rotation") {
                // Auto-rotate is off on the sim: the display turns to the user rotation at once.
                dev.ui.rotation = val.parse::<u8>().map_or(0, |r| r % 4);
            }
            0
        }
        ["delete", ns, key] if valid_ns(ns) => {
            if (*ns, *key) == ("system", "user_rotation") {
                dev.ui.rotation = 0;
            }
            let n = dev.settings.remove(&(ns.to_string(), key.to_string())).map(|_| 1).unwrap_or(0);
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
