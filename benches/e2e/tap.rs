//! One phone, interleaved A/B: one tap, the connector against `adb shell input tap`, adb_client in-process and a
//! raw host-protocol shell (the baselines that are not the adb CLI live here too).

use std::io::{Read, Write};
use std::net::{SocketAddrV4, TcpStream};
use std::time::Instant;

use adb_client::server_device::ADBServerDevice;
use adb_client::ADBDeviceExt;
use serde_json::json;

use crate::common::*;

/// CPU (user + system) of this process's waited-for children, in ms.
fn children_cpu_ms() -> f64 {
    let s = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = s.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let t = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (t(13) + t(14)) * 10.0
}

const MARKER: &str = "__XAGENT_EXIT__";

/// What the connector's device layer does for a tap, issued directly in-process through `adb_client`.
fn adb_client_shell(server: SocketAddrV4, serial: &str, cmd: &str) -> Result<(), String> {
    let mut dev = ADBServerDevice::new(serial.to_owned(), Some(server));
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let full = format!("{cmd}; echo {MARKER}$?");
    dev.shell_command(&full, Some(&mut out), Some(&mut err)).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out);
    text.contains(&format!("{MARKER}0")).then_some(()).ok_or_else(|| format!("no exit marker: {text}"))
}

fn adb_request(s: &mut TcpStream, req: &str) -> Result<(), String> {
    s.write_all(format!("{:04x}{req}", req.len()).as_bytes()).map_err(|e| e.to_string())?;
    let mut st = [0u8; 4];
    s.read_exact(&mut st).map_err(|e| e.to_string())?;
    (&st == b"OKAY").then_some(()).ok_or_else(|| format!("{req}: {}", String::from_utf8_lossy(&st)))
}

/// The floor: one TCP connection, `host:transport:SERIAL` then `shell,v2,raw:CMD` (2 round trips), no feature
/// query. What an ADB client that caches the device's features and reuses nothing else could do.
fn raw_shell(server: SocketAddrV4, serial: &str, cmd: &str) -> Result<(), String> {
    let mut s = TcpStream::connect(server).map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    adb_request(&mut s, &format!("host:transport:{serial}"))?;
    adb_request(&mut s, &format!("shell,v2,raw:{cmd}; echo {MARKER}$?"))?;
    let mut out = Vec::new();
    loop {
        let mut h = [0u8; 5];
        s.read_exact(&mut h).map_err(|e| e.to_string())?;
        let len = u32::from_le_bytes([h[1], h[2], h[3], h[4]]) as usize;
        let mut body = vec![0u8; len];
        s.read_exact(&mut body).map_err(|e| e.to_string())?;
        match h[0] {
            1 => out.extend_from_slice(&body),
            3 => break,
            _ => {}
        }
    }
    let text = String::from_utf8_lossy(&out);
    text.contains(&format!("{MARKER}0")).then_some(()).ok_or_else(|| format!("no exit marker: {text}"))
}

// ---------------------------------------------------------------------------------------------------------------
// The report

pub(crate) fn bench_tap(rt: &tokio::runtime::Runtime, p: &OnePhone, n: usize, rep: &mut Report) {
    let (x, y) = (100, 300); // an empty spot: no app switch, the counter is untouched
    let tap_cmd = format!("input tap {x} {y}");
    let (xs, ys) = (x.to_string(), y.to_string());
    let cli_args = ["-s", p.serial.as_str(), "shell", "input", "tap", xs.as_str(), ys.as_str()];
    let ws_tap = || {
        rt.block_on(async {
            let t = Instant::now();
            p.ws.invoke(&p.ch, "android_tap", json!({"settle": false, "x": x, "y": y})).await.expect("tap");
            t.elapsed()
        })
    };
    let cli_tap = || {
        let t = Instant::now();
        assert!(p.adb.run(&cli_args, None), "adb shell input tap failed");
        t.elapsed()
    };
    let direct_tap = || {
        let t = Instant::now();
        adb_client_shell(p.adb.addr(), &p.serial, &tap_cmd).expect("adb_client tap");
        t.elapsed()
    };
    let raw_tap = || {
        let t = Instant::now();
        raw_shell(p.adb.addr(), &p.serial, &tap_cmd).expect("raw tap");
        t.elapsed()
    };
    for _ in 0..10 {
        ws_tap();
        cli_tap();
        direct_tap();
        raw_tap();
    }
    let (mut a, mut b, mut c, mut d) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut cpu_conn, mut cpu_cli) = (0.0, 0.0);
    let pid = p.conn.pid();
    for i in 0..n {
        // Rotate the order so no side always runs right after another.
        for k in 0..4 {
            match (i + k) % 4 {
                0 => {
                    let c0 = proc_cpu_ms(pid);
                    a.push(ms(ws_tap()));
                    cpu_conn += proc_cpu_ms(pid) - c0;
                }
                1 => {
                    let c0 = children_cpu_ms();
                    b.push(ms(cli_tap()));
                    cpu_cli += children_cpu_ms() - c0;
                }
                2 => c.push(ms(direct_tap())),
                _ => d.push(ms(raw_tap())),
            }
        }
    }
    let (sa, sb, sc, sd) = (stats(&a), stats(&b), stats(&c), stats(&d));
    let (r50, r95) = ratio(&sa, &sb);
    rep.row(
        "1 tap: `android_tap` ack vs `adb shell input tap`",
        pp(&sa),
        pp(&sb),
        format!("{r50:.3} ({r95:.3})"),
        "≤ 0.5",
        Some(r50 <= 0.5),
    );
    let over50 = sa.p50 - sc.p50;
    let over95 = sa.p95 - sc.p95;
    rep.row(
        "2 connector overhead: tap − same op via in-process `adb_client`",
        format!("{over50:.2} / {over95:.2} ms"),
        format!("adb_client {}", pp(&sc)),
        format!("{:.3} ({:.3})", sa.p50 / sc.p50, sa.p95 / sc.p95),
        "≤ 1 ms p50",
        Some(over50 <= 1.0),
    );
    rep.row(
        "2b floor: one-connection raw ADB shell (no feature query)",
        format!("tap {}", pp(&sa)),
        format!("raw {}", pp(&sd)),
        format!("{:.3} ({:.3})", sa.p50 / sd.p50, sa.p95 / sd.p95),
        "info",
        None,
    );
    let cpu_a = cpu_conn / n as f64;
    let cpu_b = cpu_cli / n as f64;
    rep.row(
        "1b CPU per tap: connector process vs adb CLI process",
        format!("{cpu_a:.2} ms"),
        format!("{cpu_b:.2} ms"),
        format!("{:.3}", cpu_a / cpu_b),
        "info",
        None,
    );
    rep.json.insert(
        "tap".into(),
        json!({"connector": sa.json(), "adb_cli": sb.json(), "adb_client_direct": sc.json(), "raw_adb_floor": sd.json(),
               "ratio_p50": round3(r50), "ratio_p95": round3(r95), "target_ratio": 0.5, "met": r50 <= 0.5,
               "overhead_ms_p50": round3(over50), "overhead_ms_p95": round3(over95), "overhead_target_ms": 1.0,
               "overhead_met": over50 <= 1.0,
               "cpu_ms_per_tap": {"connector": round3(cpu_a), "adb_cli": round3(cpu_b)}}),
    );
}
