//! `xagent-adb-connector devices`: every device every adb server sees, and which channel holds it.

use std::net::{SocketAddr, SocketAddrV4};
use std::path::Path;

use crate::device::host;
use crate::store::Store;

/// Prints the table; returns the exit code (1 when no adb server answered).
pub async fn run(servers: &[SocketAddrV4], data_dir: &Path) -> i32 {
    let bound: Vec<(String, String, String)> = Store::open_existing(data_dir)
        .and_then(|s| s.channels().ok())
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| c.binding.map(|(srv, ser)| (srv, ser, c.channel_id)))
        .collect();
    println!("{:<22} {:<24} {:<13} {:<24} CHANNEL", "ADB SERVER", "SERIAL", "STATE", "MODEL");
    let mut answered = 0;
    for &server in servers {
        match host::devices(SocketAddr::V4(server)).await {
            Ok(list) => {
                answered += 1;
                if list.is_empty() {
                    println!("{:<22} (no devices)", server.to_string());
                }
                for d in list {
                    let channel = bound
                        .iter()
                        .find(|(srv, ser, _)| *srv == server.to_string() && *ser == d.serial)
                        .map_or("-", |(_, _, c)| c.as_str());
                    let model = d.model.unwrap_or_else(|| "-".into());
                    println!("{:<22} {:<24} {:<13} {:<24} {channel}", server.to_string(), d.serial, d.state, model);
                }
            }
            Err(e) => println!("{:<22} unreachable: {e}", server.to_string()),
        }
    }
    if answered == 0 {
        eprintln!("no adb server answered; start one with `adb start-server` (or see `xagent-adb-connector doctor`)");
        return 1;
    }
    0
}
