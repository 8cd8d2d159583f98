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
    outln!("{:<22} {:<24} {:<13} {:<24} CHANNEL", "ADB SERVER", "SERIAL", "STATE", "MODEL");
    let mut answered = 0;
    for &server in servers {
        match host::devices(SocketAddr::V4(server)).await {
            Ok(list) => {
                answered += 1;
                if list.is_empty() {
                    outln!("{:<22} (no devices)", server.to_string());
                }
                for d in list {
                    let channel = match &bound {
                        None => "?",
                        Some(b) => b
                            .iter()
                            .find(|(srv, ser, _)| *srv == server.to_string() && *ser == d.serial)
                            .map_or("-", |(_, _, c)| c.as_str()),
                    };
                    let model = d.model.unwrap_or_else(|| "-".into());
                    outln!("{:<22} {:<24} {:<13} {:<24} {channel}", server.to_string(), d.serial, d.state, model);
                }
            }
            Err(e) => outln!("{:<22} {e}", server.to_string()),
        }
    }
    if answered == 0 {
        eprintln!("no adb server answered; start one with `adb start-server` (or see `xagent-adb-connector doctor`)");
        return 1;
    }
    0
}
