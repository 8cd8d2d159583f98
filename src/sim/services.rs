//! Device services reachable through OPEN: `shell:` (v1 and shell protocol v2), `exec:`,
//! `sync:`, `abb_exec:`/`abb:`, `reboot:` and a few administrative ones.
//!
//! Shell protocol v2 is framed by `shell_v2.rs`. v1 / `exec:` are raw byte streams without an exit status: stderr
//! is merged into the stream and the end of output is signalled only by closing the stream.

use std::sync::Arc;
use std::time::Duration;

use super::cmdio::ExecResult;
use super::gates::{apply_fault, stall_point};
use super::shared::Shared;
use super::shell;
use super::shell_v2::*;
use super::state::FrameLie;
use super::stream::{StreamIn, StreamOut};
use super::{commands, sync};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Service {
    /// `shell[,args]:CMD`; `v2` when the `v2` argument is present. Empty command = interactive.
    Shell {
        cmd: String,
        v2: bool,
    },
    Exec(String),
    Sync,
    /// `abb_exec:` (raw) or `abb:` (shell protocol v2); arguments are NUL separated.
    Abb {
        args: Vec<String>,
        v2: bool,
    },
    Reboot(String),
    /// `framebuffer:`: header + raw RGBA pixels (used by e.g. `adb_client`'s screenshot).
    Framebuffer,
    /// Services that print one message and close (`root:`, `tcpip:`...).
    Message(String),
    /// `localabstract:NAME`: a stream to an abstract unix socket on the phone (the browser's DevTools).
    LocalAbstract(String),
}

/// Maps an OPEN payload to a service; `None` means "unknown service" (answered with CLSE).
pub fn parse(name: &str) -> Option<Service> {
    if let Some(rest) = name.strip_prefix("shell") {
        let (args, cmd) = match rest.split_once(':') {
            Some((a, c)) => (a, c),
            None if rest.is_empty() => ("", ""),
            None => return None,
        };
        if !args.is_empty() && !args.starts_with(',') {
            return None;
        }
        let v2 = args.split(',').any(|a| a == "v2");
        return Some(Service::Shell { cmd: cmd.to_string(), v2 });
    }
    if let Some(cmd) = name.strip_prefix("exec:") {
        return Some(Service::Exec(cmd.to_string()));
    }
    if name == "sync:" {
        return Some(Service::Sync);
    }
    if name == "framebuffer:" {
        return Some(Service::Framebuffer);
    }
    for (prefix, v2) in [("abb_exec:", false), ("abb:", true)] {
        if let Some(rest) = name.strip_prefix(prefix) {
            let args = rest.split('\0').map(str::to_string).collect();
            return Some(Service::Abb { args, v2 });
        }
    }
    if let Some(socket) = name.strip_prefix("localabstract:") {
        return Some(Service::LocalAbstract(socket.to_string()));
    }
    if let Some(arg) = name.strip_prefix("reboot:") {
        return Some(Service::Reboot(arg.to_string()));
    }
    let msg = match name.split_once(':') {
        Some(("root", _)) => "adbd cannot run as root in production builds\n".to_string(),
        Some(("unroot", _)) => "adbd not running as root\n".to_string(),
        Some(("remount", _)) => "Not running as root. Try \"adb root\" first.\n".to_string(),
        Some(("tcpip", port)) => format!("restarting in TCP mode port: {port}\n"),
        Some(("usb", _)) => "restarting in USB mode\n".to_string(),
        Some(("enable-verity" | "disable-verity", _)) => "verity cannot be disabled/enabled - USER build\n".to_string(),
        _ => return None,
    };
    Some(Service::Message(msg))
}

/// Number of stdin bytes a streamed install (`cmd package install -S N`, `pm install -S N`) will
/// send; the command can only run once they have arrived.
fn stdin_needed(cmd: &str) -> Option<usize> {
    let words = shell::split_words(cmd).ok()?;
    if !words.iter().any(|w| w == "install") {
        return None;
    }
    let i = words.iter().position(|w| w == "-S")?;
    words.get(i + 1)?.parse().ok().filter(|n| *n <= 512 * 1024 * 1024)
}

/// Reads `n` bytes of stdin, from raw stream bytes or from v2 stdin packets.
async fn read_stdin(input: &mut StreamIn, n: usize, v2: bool) -> Option<Vec<u8>> {
    if !v2 {
        return input.read_exact(n).await;
    }
    let mut pr = PacketReader::default();
    let mut data = Vec::new();
    while data.len() < n {
        while let Some((id, d)) = pr.next_packet() {
            match id {
                ID_STDIN => data.extend_from_slice(&d),
                ID_CLOSE_STDIN => return Some(data),
                _ => {}
            }
        }
        if data.len() >= n {
            break;
        }
        pr.push(&input.recv().await?);
    }
    Some(data)
}

/// Applies the injected fault and runs a command line. `None` if the stream or connection went
/// away while the command was held back by a `Hang` or a stall.
async fn execute(
    shared: &Arc<Shared>,
    cmd: &str,
    stdin: &[u8],
    input: &mut StreamIn,
    out: &StreamOut,
) -> Option<ExecResult> {
    shared.device.lock().unwrap_or_else(|e| e.into_inner()).record_command(cmd);
    if !stall_point(shared, cmd.trim_start(), input).await {
        return None;
    }
    if !apply_fault(shared, input, out).await {
        return None;
    }
    let res = {
        let mut dev = shared.device.lock().unwrap_or_else(|e| e.into_inner());
        let scripted =
            dev.answers.iter().find(|(p, _)| cmd.trim_start().starts_with(p.as_str())).map(|(_, r)| r.clone());
        scripted.unwrap_or_else(|| commands::run_line(&mut dev, cmd, stdin))
    };
    if !res.sleep.is_zero() {
        tokio::select! {
            _ = tokio::time::sleep(res.sleep) => {}
            _ = out.connection_closed() => return None,
        }
    }
    Some(res)
}

pub(crate) async fn run(service: Service, shared: Arc<Shared>, mut input: StreamIn, mut out: StreamOut) {
    shared.streams.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    // Every stream costs a round trip over USB (and a shell adbd's `sh` fork) before its service runs.
    let open = shared.cfg.costs.stream_open;
    if !open.is_zero() {
        // What the client sends meanwhile (a DevTools request right after the OPEN) is kept for the service.
        tokio::select! {
            _ = tokio::time::sleep(open) => {}
            _ = input.wait_closed_keeping() => return,
        }
    }
    match service {
        Service::Shell { cmd, v2 } if cmd.trim().is_empty() => interactive(&shared, &mut input, &mut out, v2).await,
        Service::Shell { cmd, v2 } => run_command(&shared, &cmd, &mut input, &mut out, v2).await,
        Service::Exec(cmd) => run_command(&shared, &cmd, &mut input, &mut out, false).await,
        Service::Abb { args, v2 } => {
            let cmd = std::iter::once("cmd".to_string())
                .chain(args.iter().map(|a| shell_quote(a)))
                .collect::<Vec<_>>()
                .join(" ");
            run_command(&shared, &cmd, &mut input, &mut out, v2).await
        }
        Service::Sync => sync::run(&shared, &mut input, &mut out).await,
        Service::Reboot(arg) => {
            shared.device.lock().unwrap_or_else(|e| e.into_inner()).record_command(&format!("reboot:{arg}"));
            drop(out);
            // A rebooting phone drops off the bus: close every transport shortly after.
            tokio::time::sleep(Duration::from_millis(100)).await;
            shared.kill.send_modify(|k| *k += 1);
        }
        Service::Framebuffer => {
            shared.device.lock().unwrap_or_else(|e| e.into_inner()).record_command("framebuffer:");
            if !stall_point(&shared, "framebuffer:", &mut input).await || !apply_fault(&shared, &mut input, &out).await
            {
                return;
            }
            let started = tokio::time::Instant::now();
            let (w, h, mut px, lie) = {
                let dev = shared.device.lock().unwrap_or_else(|e| e.into_inner());
                let (w, h) = dev.ui.logical_size();
                (w, h, dev.ui.render_rgba(), dev.frame_lie)
            };
            // adbd's fbinfo v2: version, bpp, colorSpace, size, width, height, then
            // offset/length for red, blue, green, alpha.
            let mut hdr = [2, 32, 1, px.len() as u32, w, h, 0, 8, 16, 8, 8, 8, 24, 8];
            match lie {
                FrameLie::None | FrameLie::GzipBomb | FrameLie::GzipCorrupt | FrameLie::GzipShort => {}
                FrameLie::ChannelOverflow => hdr[6] = 0xFFFF_FFF8,
                FrameLie::Truncated => px.truncate(px.len() / 2),
                FrameLie::Claims(cw, ch) => {
                    hdr[3] = cw.wrapping_mul(ch).wrapping_mul(4);
                    (hdr[4], hdr[5]) = (cw, ch);
                    px.truncate(64);
                }
                FrameLie::Huge => {
                    // 60 000² × 4 does not fit the u32 size word: it carries the product wrapped, as C would.
                    hdr[3] = 60_000u32.wrapping_mul(60_000).wrapping_mul(4);
                    (hdr[4], hdr[5]) = (60_000, 60_000);
                    px.truncate(64);
                }
            }
            let mut b = Vec::with_capacity(56 + px.len());
            for n in hdr {
                b.extend_from_slice(&u32::to_le_bytes(n));
            }
            b.extend_from_slice(&px);
            // adbd runs `screencap` for this service: the phone reads its display first.
            tokio::select! {
                _ = tokio::time::sleep_until(started + shared.cfg.costs.display_read) => {}
                _ = input.wait_closed() => return,
            }
            let _ = out.write(&b).await;
        }
        Service::Message(msg) => {
            let _ = out.write(msg.as_bytes()).await;
        }
        Service::LocalAbstract(socket) => super::devtools::serve(shared, socket, input, out).await,
    }
}

fn shell_quote(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

async fn run_command(shared: &Arc<Shared>, cmd: &str, input: &mut StreamIn, out: &mut StreamOut, v2: bool) {
    // The resident phone helper talks over its stdin and stdout for as long as the stream lives (shell v2 only:
    // that is how the host starts it, and only v2 can close stdin without closing the stream).
    if let (true, Some(dex)) = (v2, super::helper::command_dex(cmd)) {
        super::helper::serve(shared, cmd, dex, input, out).await;
        return;
    }
    let stdin = match stdin_needed(cmd) {
        Some(n) => match read_stdin(input, n, v2).await {
            Some(d) => d,
            None => return,
        },
        None => Vec::new(),
    };
    let Some(res) = execute(shared, cmd, &stdin, input, out).await else {
        return;
    };
    let lie = shared.device.lock().unwrap_or_else(|e| e.into_inner()).length_lie;
    let bytes = if v2 && lie {
        // A stdout packet announcing ~4 GiB, a few bytes, then silence until the host hangs up.
        let mut b = vec![1u8];
        b.extend_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        b.extend_from_slice(b"lie");
        let _ = out.write(&b).await;
        input.wait_closed().await;
        return;
    } else if v2 {
        encode_v2(&res, !res.follow)
    } else {
        let mut b = res.stdout.clone();
        b.extend_from_slice(&res.stderr);
        b
    };
    if out.write(&bytes).await.is_err() {
        return;
    }
    if res.follow {
        // e.g. `logcat` without -d: a real device keeps streaming until the client hangs up.
        input.wait_closed().await;
    }
}

/// Interactive shell (`adb shell` with no command): line-oriented, prompt after each command.
async fn interactive(shared: &Arc<Shared>, input: &mut StreamIn, out: &mut StreamOut, v2: bool) {
    let prompt = {
        let dev = shared.device.lock().unwrap_or_else(|e| e.into_inner());
        format!("{}:/ $ ", dev.props.get("ro.product.device").cloned().unwrap_or_default())
    };
    let wrap = |data: &[u8], id: u8| if v2 { packet(id, data) } else { data.to_vec() };
    if out.write(&wrap(prompt.as_bytes(), ID_STDOUT)).await.is_err() {
        return;
    }
    let mut pr = PacketReader::default();
    let mut line = Vec::new();
    while let Some(chunk) = input.recv().await {
        let mut typed = Vec::new();
        if v2 {
            pr.push(&chunk);
            while let Some((id, d)) = pr.next_packet() {
                match id {
                    ID_STDIN => typed.extend_from_slice(&d),
                    ID_CLOSE_STDIN => typed.extend_from_slice(b"\nexit\n"),
                    _ => {}
                }
            }
        } else {
            typed = chunk;
        }
        for b in typed {
            if b != b'\n' && b != b'\r' {
                line.push(b);
                continue;
            }
            let cmd = String::from_utf8_lossy(&std::mem::take(&mut line)).into_owned();
            if cmd.trim().is_empty() {
                continue;
            }
            let Some(res) = execute(shared, &cmd, &[], input, out).await else {
                return;
            };
            let mut bytes = if v2 { encode_v2(&res, false) } else { [res.stdout.clone(), res.stderr.clone()].concat() };
            let exiting = cmd.trim() == "exit" || cmd.trim().starts_with("exit ");
            if exiting {
                if v2 {
                    bytes.extend(packet(ID_EXIT, &[(res.status & 0xff) as u8]));
                }
                let _ = out.write(&bytes).await;
                return;
            }
            bytes.extend(wrap(prompt.as_bytes(), ID_STDOUT));
            if out.write(&bytes).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_service_names() {
        assert_eq!(parse("shell:getprop"), Some(Service::Shell { cmd: "getprop".into(), v2: false }));
        assert_eq!(parse("shell,v2,TERM=xterm,raw:ls -l"), Some(Service::Shell { cmd: "ls -l".into(), v2: true }));
        assert_eq!(parse("shell,v2,pty:"), Some(Service::Shell { cmd: "".into(), v2: true }));
        assert_eq!(parse("exec:screencap -p"), Some(Service::Exec("screencap -p".into())));
        assert_eq!(parse("sync:"), Some(Service::Sync));
        assert_eq!(
            parse("abb_exec:package\0install\0-S\x005"),
            Some(Service::Abb { args: vec!["package".into(), "install".into(), "-S".into(), "5".into()], v2: false })
        );
        assert_eq!(parse("shellfoo:x"), None);
        assert_eq!(parse("jdwp:1"), None);
        assert_eq!(parse("framebuffer:"), Some(Service::Framebuffer));
    }

    #[test]
    fn detects_streamed_install_size() {
        assert_eq!(stdin_needed("cmd package 'install' -S 1234"), Some(1234));
        assert_eq!(stdin_needed("cmd package install -r -S 9"), Some(9));
        assert_eq!(stdin_needed("pm install /data/local/tmp/a.apk"), None);
        assert_eq!(stdin_needed("getprop"), None);
    }
}
