//! `xagent-adb-connector devices`: every device every adb server sees, and which channel holds it.

use std::net::{SocketAddr, SocketAddrV4};
use std::path::Path;

use super::out::outln;
use super::settings::{self, StateProblem};
use crate::device::host;

/// Prints the table; returns the exit code (1 when no adb server answered).
pub async fn run(servers: &[SocketAddrV4], data_dir: &Path) -> i32 {
    // Bindings come from the connector's state, opened read-only. When it cannot be read the CHANNEL column says
    // `?` (unknown) rather than `-` (free), and stderr says why.
    let bound: Option<Vec<(String, String, String)>> = match settings::open_state(data_dir) {
        Ok(store) => match store.channels() {
            Ok(rows) => {
                Some(rows.into_iter().filter_map(|c| c.binding.map(|(srv, ser)| (srv, ser, c.channel_id))).collect())
            }
            Err(e) => {
                eprintln!("note: cannot read channel bindings from {}: {e}", data_dir.display());
                None
            }
        },
        Err(StateProblem::Missing(_)) => Some(Vec::new()),
        Err(p) => {
            eprintln!("note: CHANNEL shows `?`: {}", p.message());
            None
        }
    };
    let mut listed = Vec::new();
    let mut answered = 0;
    for &server in servers {
        match host::devices(SocketAddr::V4(server)).await {
            Ok(list) => {
                answered += 1;
                listed.push((server, Ok(list)));
            }
            Err(e) => listed.push((server, Err(e))),
        }
    }
    // A phone on two paths (USB + Wi-Fi) is bound under one of its serials: the same evidence as the connector's
    // (`device::identity`: same adb server, same `ro.serialno` and boot id) lets its other rows show the holder.
    let adb = crate::device::adb::AdbBackend::new(servers.to_vec());
    let mut hardware: Vec<((String, String), crate::device::identity::Proof)> = Vec::new();
    for (server, list) in &listed {
        for d in list.iter().flatten().filter(|d| d.state == "device") {
            let key = crate::device::DeviceKey { server: server.to_string(), serial: d.serial.clone() };
            let probe = "getprop ro.serialno; cat /proc/sys/kernel/random/boot_id 2>/dev/null || echo";
            if let Ok(out) = adb.shell_ok(&key, probe, false, std::time::Duration::from_secs(3)).await {
                let mut l = out.lines().map(str::trim);
                let (serialno, boot_id) = (l.next().unwrap_or(""), l.next().unwrap_or(""));
                if let Some(proof) = crate::device::identity::Proof::of(&key, serialno, boot_id) {
                    hardware.push(((key.server, key.serial), proof));
                }
            }
        }
    }
    let hw_of = |srv: &str, ser: &str| hardware.iter().find(|((a, b), _)| a == srv && b == ser).map(|(_, h)| h);
    outln!("{:<22} {:<24} {:<13} {:<24} CHANNEL", "ADB SERVER", "SERIAL", "STATE", "MODEL");
    for (server, list) in listed {
        let list = match list {
            Ok(l) => l,
            Err(e) => {
                outln!("{:<22} {e}", server.to_string());
                continue;
            }
        };
        if list.is_empty() {
            outln!("{:<22} (no devices)", server.to_string());
        }
        for d in list {
            let srv = server.to_string();
            let channel = match &bound {
                None => "?".to_owned(),
                Some(b) => match b.iter().find(|(s, ser, _)| *s == srv && *ser == d.serial) {
                    Some((_, _, c)) => c.clone(),
                    None => {
                        // Held through another path of the same phone?
                        let mine = hw_of(&srv, &d.serial);
                        b.iter()
                            .find(|(s, ser, _)| mine.is_some() && hw_of(s, ser) == mine)
                            .map_or_else(|| "-".to_owned(), |(_, ser, c)| format!("{c} (same phone as {ser})"))
                    }
                },
            };
            let model = d.model.unwrap_or_else(|| "-".into());
            outln!("{:<22} {:<24} {:<13} {:<24} {channel}", srv, d.serial, d.state, model);
        }
    }
    if answered == 0 {
        eprintln!(
            "no adb server answered. On a box where the connector is installed start the service's own: `sudo \
             systemctl start adb-server` (an `adb start-server` run as another user is not the one the service \
             uses); elsewhere `adb start-server`. `xagent-adb-connector doctor` says more"
        );
        return 1;
    }
    0
}
