//! Loopback tests that speak the raw ADB wire protocol to the sim (no adb binary needed), so the
//! transport, flow control, shell v2 and sync behaviour are pinned independently of the adb
//! version installed on the machine.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use super::shell_v2::{PacketReader, ID_EXIT, ID_STDOUT};
use super::wire::*;
use super::{Fault, SimConfig, SimPhone};

const T: Duration = Duration::from_secs(10);

struct Host {
    sock: TcpStream,
}

impl Host {
    async fn raw(addr: SocketAddr) -> Host {
        Host { sock: TcpStream::connect(addr).await.expect("connect") }
    }

    async fn connect(addr: SocketAddr, maxdata: u32) -> (Host, String) {
        let mut h = Host::raw(addr).await;
        h.send(A_CNXN, A_VERSION, maxdata, b"host::features=shell_v2,cmd,stat_v2\0").await;
        let m = h.recv().await.expect("CNXN reply");
        assert_eq!(m.command, A_CNXN);
        assert_eq!(m.arg0, A_VERSION);
        assert_eq!(m.arg1, MAX_PAYLOAD);
        (h, String::from_utf8_lossy(&m.data).into_owned())
    }

    async fn send(&mut self, cmd: u32, a0: u32, a1: u32, data: &[u8]) {
        self.sock.write_all(&Message::new(cmd, a0, a1, data.to_vec()).encode()).await.expect("send");
    }

    /// Next message, `None` on EOF/reset.
    async fn recv(&mut self) -> Option<Message> {
        tokio::time::timeout(T, read_message(&mut self.sock)).await.expect("recv timed out").ok().flatten()
    }

    async fn open(&mut self, local: u32, service: &str) -> u32 {
        let mut name = service.as_bytes().to_vec();
        name.push(0);
        self.send(A_OPEN, local, 0, &name).await;
        let m = self.recv().await.expect("OPEN reply");
        assert_eq!((m.command, m.arg1), (A_OKAY, local), "service {service} refused");
        m.arg0
    }

    /// Collects a stream's data until CLSE, acknowledging every WRTE.
    async fn read_to_close(&mut self, local: u32, remote: u32) -> Vec<u8> {
        let mut data = Vec::new();
        loop {
            let m = self.recv().await.expect("stream data");
            assert_eq!(m.arg1, local);
            match m.command {
                A_WRTE => {
                    assert_eq!(m.arg0, remote);
                    data.extend_from_slice(&m.data);
                    self.send(A_OKAY, local, remote, &[]).await;
                }
                A_CLSE => return data,
                other => panic!("unexpected {other:#x}"),
            }
        }
    }
}

async fn sim() -> SimPhone {
    SimPhone::start("127.0.0.1:0".parse().unwrap(), SimConfig::default()).await.unwrap()
}

fn v2_packets(data: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut pr = PacketReader::default();
    pr.push(data);
    std::iter::from_fn(|| pr.next_packet()).collect()
}

#[tokio::test]
async fn handshake_banner_and_shell_v2() {
    let sim = sim().await;
    let (mut h, banner) = Host::connect(sim.addr(), 1024 * 1024).await;
    assert!(banner.starts_with("device::ro.product.name="), "{banner}");
    assert!(banner.contains(";ro.product.model=Pixel 7 (sim);"));
    assert!(banner.contains("features=shell_v2,cmd,stat_v2,ls_v2"));
    assert!(!banner.contains("delayed_ack"));
    let remote = h.open(1, "shell,v2,raw:echo hi; exit 7").await;
    let data = h.read_to_close(1, remote).await;
    assert_eq!(v2_packets(&data), vec![(ID_STDOUT, b"hi\n".to_vec()), (ID_EXIT, vec![7])]);
    // v1: raw bytes, stderr merged, no exit status.
    let remote = h.open(2, "shell:nope").await;
    assert_eq!(h.read_to_close(2, remote).await, b"/system/bin/sh: nope: inaccessible or not found\n");
    assert_eq!(sim.commands(), vec!["echo hi; exit 7", "nope"]);
    sim.shutdown().await;
}

#[tokio::test]
async fn unknown_service_is_refused_with_clse() {
    let sim = sim().await;
    let (mut h, _) = Host::connect(sim.addr(), 4096).await;
    h.send(A_OPEN, 5, 0, b"jdwp:123\0").await;
    let m = h.recv().await.unwrap();
    assert_eq!((m.command, m.arg0, m.arg1), (A_CLSE, 0, 5));
    sim.shutdown().await;
}

#[tokio::test]
async fn waits_for_okay_before_next_wrte() {
    let sim = sim().await;
    let (mut h, _) = Host::connect(sim.addr(), 4096).await;
    let remote = h.open(1, "exec:screencap").await;
    let first = h.recv().await.unwrap();
    assert_eq!(first.command, A_WRTE);
    assert_eq!(first.data.len(), 4096, "peer's smaller maxdata must be respected");
    // Without our OKAY nothing more may arrive.
    let more = tokio::time::timeout(Duration::from_millis(300), read_message(&mut h.sock)).await;
    assert!(more.is_err(), "sim sent a WRTE before receiving OKAY");
    h.send(A_OKAY, 1, remote, &[]).await;
    let mut total = first.data.len();
    let mut header = first.data[..16].to_vec();
    loop {
        let m = h.recv().await.unwrap();
        match m.command {
            A_WRTE => {
                total += m.data.len();
                h.send(A_OKAY, 1, remote, &[]).await;
            }
            A_CLSE => break,
            c => panic!("unexpected {c:#x}"),
        }
    }
    assert_eq!(total, 16 + 1080 * 2400 * 4);
    header.truncate(16);
    assert_eq!(&header[..12], &[0x38, 4, 0, 0, 0x60, 9, 0, 0, 1, 0, 0, 0]);
    sim.shutdown().await;
}

fn sync_req(id: &[u8; 4], arg: &[u8]) -> Vec<u8> {
    let mut v = id.to_vec();
    v.extend_from_slice(&(arg.len() as u32).to_le_bytes());
    v.extend_from_slice(arg);
    v
}

#[tokio::test]
async fn sync_send_stat_recv_list() {
    let sim = sim().await;
    let (mut h, _) = Host::connect(sim.addr(), 256 * 1024).await;
    let remote = h.open(1, "sync:").await;
    let content: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
    let mut req = sync_req(b"SEND", b"/sdcard/new/dir/f.bin,33188");
    for chunk in content.chunks(64 * 1024) {
        req.extend(sync_req(b"DATA", chunk));
    }
    req.extend_from_slice(b"DONE");
    req.extend_from_slice(&1_700_000_000u32.to_le_bytes());
    req.extend(sync_req(b"STAT", b"/sdcard/new/dir/f.bin"));
    req.extend(sync_req(b"STA2", b"/sdcard/missing"));
    req.extend(sync_req(b"RECV", b"/sdcard/new/dir/f.bin"));
    req.extend(sync_req(b"LIST", b"/sdcard/new/dir"));
    req.extend(sync_req(b"QUIT", b""));
    // Split at awkward boundaries: requests are a byte stream, not message aligned.
    for (i, chunk) in req.chunks(7000).enumerate() {
        h.send(A_WRTE, 1, remote, chunk).await;
        let ack = h.recv().await.unwrap();
        assert_eq!((ack.command, ack.arg0, ack.arg1), (A_OKAY, remote, 1), "chunk {i}");
    }
    let resp = h.read_to_close(1, remote).await;
    let mut r = &resp[..];
    let mut take = |n: usize| {
        let (a, b) = r.split_at(n);
        r = b;
        a.to_vec()
    };
    assert_eq!(take(8), b"OKAY\0\0\0\0");
    let st = take(16);
    assert_eq!(&st[..4], b"STAT");
    assert_eq!(u32::from_le_bytes(st[4..8].try_into().unwrap()), 0o100644);
    assert_eq!(u32::from_le_bytes(st[8..12].try_into().unwrap()), 100_000);
    assert_eq!(u32::from_le_bytes(st[12..16].try_into().unwrap()), 1_700_000_000);
    let st2 = take(72);
    assert_eq!(&st2[..4], b"STA2");
    assert_eq!(u32::from_le_bytes(st2[4..8].try_into().unwrap()), 2, "ENOENT");
    let mut got = Vec::new();
    loop {
        let hdr = take(8);
        let n = u32::from_le_bytes(hdr[4..8].try_into().unwrap()) as usize;
        match &hdr[..4] {
            b"DATA" => {
                assert!(n <= 64 * 1024);
                got.extend(take(n));
            }
            b"DONE" => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(got, content);
    let dent = take(20);
    assert_eq!(&dent[..4], b"DENT");
    assert_eq!(take(5), b"f.bin");
    assert_eq!(&take(20)[..4], b"DONE");
    assert!(r.is_empty());
    sim.shutdown().await;
}

#[tokio::test]
async fn malformed_peer_is_disconnected_without_harm() {
    let sim = sim().await;
    let mut h = Host::raw(sim.addr()).await;
    h.sock.write_all(&[0xAB; 24]).await.unwrap();
    assert!(h.recv().await.is_none(), "bad magic must close the connection");
    // Oversized payload claim.
    let mut h = Host::raw(sim.addr()).await;
    let mut m = Message::new(A_CNXN, A_VERSION, 4096, vec![]).encode();
    m[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    h.sock.write_all(&m).await.unwrap();
    assert!(h.recv().await.is_none());
    // Messages for unknown streams and before CNXN are ignored; the sim keeps working.
    let mut h = Host::raw(sim.addr()).await;
    h.send(A_WRTE, 9, 9, b"x").await;
    h.send(A_OPEN, 1, 0, b"shell:id\0").await;
    h.send(A_CNXN, A_VERSION, 4096, b"host::\0").await;
    assert_eq!(h.recv().await.unwrap().command, A_CNXN);
    h.send(A_OKAY, 3, 4, &[]).await;
    h.send(A_CLSE, 3, 4, &[]).await;
    let remote = h.open(2, "shell:echo ok").await;
    assert_eq!(h.read_to_close(2, remote).await, b"ok\n");
    sim.shutdown().await;
}

#[tokio::test]
async fn unauthorized_fault_loops_on_auth() {
    let sim = sim().await;
    sim.set_fault(Fault::Unauthorized);
    let mut h = Host::raw(sim.addr()).await;
    h.send(A_CNXN, A_VERSION, 4096, b"host::\0").await;
    for _ in 0..3 {
        let m = h.recv().await.unwrap();
        assert_eq!((m.command, m.arg0, m.data.len()), (A_AUTH, AUTH_TOKEN, 20));
        h.send(A_AUTH, AUTH_SIGNATURE, 0, &[1; 256]).await;
    }
    let _token = h.recv().await.unwrap();
    h.send(A_AUTH, AUTH_RSAPUBLICKEY, 0, b"QAAAA... user@host\0").await;
    let none = tokio::time::timeout(Duration::from_millis(200), read_message(&mut h.sock)).await;
    assert!(none.is_err(), "public key must leave the device waiting for the user");
    // "User accepts": the next AUTH completes the handshake.
    sim.set_fault(Fault::None);
    h.send(A_AUTH, AUTH_RSAPUBLICKEY, 0, b"QAAAA... user@host\0").await;
    assert_eq!(h.recv().await.unwrap().command, A_CNXN);
    sim.shutdown().await;
}

#[tokio::test]
async fn hang_then_drop_connections() {
    let sim = sim().await;
    let (mut h, _) = Host::connect(sim.addr(), 4096).await;
    sim.set_fault(Fault::Hang);
    let _remote = h.open(1, "shell,v2,raw:echo never").await;
    let waited = tokio::time::timeout(Duration::from_millis(300), read_message(&mut h.sock)).await;
    assert!(waited.is_err(), "hung command answered");
    assert_eq!(sim.commands(), vec!["echo never"]);
    sim.drop_connections();
    assert!(h.recv().await.is_none(), "connection must be closed");
    // Offline: new connections are closed immediately.
    sim.set_fault(Fault::Offline);
    let mut h = Host::raw(sim.addr()).await;
    h.send(A_CNXN, A_VERSION, 4096, b"host::\0").await;
    assert!(h.recv().await.is_none());
    sim.set_fault(Fault::None);
    let (mut h, _) = Host::connect(sim.addr(), 4096).await;
    let remote = h.open(1, "exec:echo back").await;
    assert_eq!(h.read_to_close(1, remote).await, b"back\n");
    sim.shutdown().await;
}

#[tokio::test]
async fn framebuffer_and_streamed_install() {
    let sim = sim().await;
    let (mut h, _) = Host::connect(sim.addr(), 256 * 1024).await;
    let remote = h.open(1, "framebuffer:").await;
    let fb = h.read_to_close(1, remote).await;
    let word = |i: usize| u32::from_le_bytes(fb[i * 4..i * 4 + 4].try_into().unwrap());
    assert_eq!((word(0), word(1), word(4), word(5)), (2, 32, 1080, 2400));
    assert_eq!(fb.len(), 56 + word(3) as usize);
    // adb_client / adb install streaming: `exec:cmd package 'install' -S N` + N bytes of APK.
    let apk = b"PK\x03\x04 pretend apk";
    let remote = h.open(2, &format!("exec:cmd package 'install' -S {}", apk.len())).await;
    h.send(A_WRTE, 2, remote, &apk[..5]).await;
    assert_eq!(h.recv().await.unwrap().command, A_OKAY);
    h.send(A_WRTE, 2, remote, &apk[5..]).await;
    assert_eq!(h.recv().await.unwrap().command, A_OKAY);
    assert_eq!(h.read_to_close(2, remote).await, b"Success\n");
    sim.shutdown().await;
}

/// The helper's start command for a dex at `path` (as the host sends it).
fn helper_cmd(path: &str) -> String {
    format!("shell,v2,raw:CLASSPATH={path} {}", super::helper::ARGS)
}

/// Plays `input` to a helper on a fresh v2 stream (closing stdin after it) and returns its stdout lines and exit.
async fn play_helper(sim: &SimPhone, input: &[u8]) -> (Vec<String>, Vec<u8>) {
    let (mut h, _) = Host::connect(sim.addr(), MAX_PAYLOAD).await;
    let remote = h.open(1, &helper_cmd("/data/local/tmp/xagent-helper-0123456789abcdef.dex")).await;
    let mut stdin = super::shell_v2::packet(super::shell_v2::ID_STDIN, input);
    stdin.extend(super::shell_v2::packet(super::shell_v2::ID_CLOSE_STDIN, &[]));
    let mut data = Vec::new();
    let mut closed = false;
    for chunk in stdin.chunks(4096) {
        h.send(A_WRTE, 1, remote, chunk).await;
        // Our WRTE's OKAY, with the helper's own output (the greeting, replies) in between.
        loop {
            let m = h.recv().await.expect("OKAY");
            match m.command {
                A_OKAY => break,
                A_WRTE => {
                    data.extend_from_slice(&m.data);
                    h.send(A_OKAY, 1, remote, &[]).await;
                }
                _ => {
                    closed = true;
                    break;
                }
            }
        }
        if closed {
            break;
        }
    }
    if !closed {
        data.extend(h.read_to_close(1, remote).await);
    }
    let (mut out, mut exit) = (Vec::new(), Vec::new());
    for (id, d) in v2_packets(&data) {
        match id {
            ID_STDOUT => out.extend_from_slice(&d),
            ID_EXIT => exit = d,
            _ => {}
        }
    }
    let lines = String::from_utf8(out).unwrap().lines().map(str::to_owned).collect();
    (lines, exit)
}

/// The protocol cases of `tests/fixtures/phone-helper/` (which the real dex passes on a host JVM) against the
/// simulator's native helper: the same `<` lines for the same requests, where the simulator can play the case's
/// `!` settings. The simulator is helper 2 (tree and idle implemented), so a greeting is compared without the
/// helper version and those two states, and a case's `not_implemented` answer to tree/idle must be an `ok` here.
#[tokio::test]
async fn the_native_helper_answers_the_protocol_cases() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/phone-helper");
    let mut played = 0;
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    'case: for path in names.into_iter().filter(|p| p.extension().is_some_and(|x| x == "case")) {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut cfg = SimConfig::default();
        let mut clip = None;
        let (mut input, mut want) = (Vec::new(), Vec::new());
        // Text requests by id: all printable ASCII or not.
        let mut ascii: Vec<(String, bool)> = Vec::new();
        for line in text.lines() {
            if let Some(s) = line.strip_prefix("! ") {
                for kv in s.split_whitespace() {
                    match kv.split_once('=').unwrap_or((kv, "")) {
                        ("sdk", n) => cfg.sdk = n.parse().unwrap(),
                        ("deny", "1") => cfg.helper = super::helper::Mode::Denied,
                        ("clip_read_denied", "1") => cfg.helper = super::helper::Mode::ClipUnreadable,
                        ("clip", c) => clip = Some(c.to_owned()),
                        ("interactive", "1") => {}
                        // What the simulator cannot play: a missing service, a throwing call, a refused event.
                        _ => continue 'case,
                    }
                }
            } else if let Some(r) = line.strip_prefix("> ") {
                if let Some((id, b64)) = r.split_once(" text ") {
                    let t = crate::base64::decode(b64).unwrap_or_default();
                    ascii.push((id.to_owned(), t.iter().all(|b| (0x20..=0x7e).contains(b))));
                }
                input.extend_from_slice(r.as_bytes());
                input.push(b'\n');
            } else if let Some(h) = line.strip_prefix(">hex ") {
                input.extend(h.split_whitespace().map(|b| u8::from_str_radix(b, 16).unwrap()));
            } else if let Some(l) = line.strip_prefix(">long ") {
                let (id, n) = l.split_once(' ').unwrap();
                input.extend_from_slice(format!("{id} ping {}\n", "x".repeat(n.parse().unwrap())).as_bytes());
            } else if let Some(r) = line.strip_prefix("< ") {
                want.push(r.to_owned());
            }
        }
        let sim = SimPhone::start("127.0.0.1:0".parse().unwrap(), cfg).await.unwrap();
        sim.write_file("/data/local/tmp/xagent-helper-0123456789abcdef.dex", b"dex\n038\0");
        sim.device().clipboard = clip;
        let (got, exit) = play_helper(&sim, &input).await;
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(exit, vec![0], "{name}: exit status");
        assert_eq!(got.len(), want.len(), "{name}: {got:#?}");
        let plain = |l: &str| -> String {
            // `1 <helper version> <sdk> op=state…` without the helper version and the tree/idle states.
            let w: Vec<&str> = l.split(' ').collect();
            let (head, rest) = (&w[..3], &w[4..]);
            let rest: Vec<&str> =
                rest.iter().copied().filter(|f| !f.starts_with("tree=") && !f.starts_with("idle=")).collect();
            format!("{} {}", head.join(" "), rest.join(" "))
        };
        for (g, w) in got.iter().zip(&want) {
            if w.starts_with("* hello ") || w.split(' ').nth(2) == Some("1") && w.contains(" touch=") {
                assert_eq!(plain(g), plain(w), "{name}: greeting");
            } else if let Some(id) = w.strip_suffix(" err unavailable not_implemented") {
                assert!(g.starts_with(&format!("{id} ok ")), "{name}: the sim implements tree and idle: {g}");
            } else if w.contains(" ok paste ") && g.contains(" ok keys ") {
                // The JVM stubs' key map is smaller than Android's on purpose (letters, digits, space, ',' '.'); the
                // simulator's types every printable ASCII character as keys, as Android's virtual keyboard does.
                let id = w.split(' ').next().unwrap();
                assert!(ascii.iter().any(|(i, a)| i == id && *a), "{name}: {g} for non-ASCII text");
            } else {
                assert_eq!(g, w, "{name}");
            }
        }
        played += 1;
        sim.shutdown().await;
    }
    assert!(played >= 10, "only {played} cases could be played");
}

#[tokio::test]
async fn the_native_helper_needs_its_dex_and_shows_in_ps_until_killed() {
    let sim = sim().await;
    // No dex pushed: app_process finds no class and exits 1 without a greeting.
    let (lines, exit) = play_helper(&sim, b"a ping\n").await;
    assert_eq!((lines.len(), exit), (0, vec![1]));
    sim.write_file("/data/local/tmp/xagent-helper-0123456789abcdef.dex", b"dex\n038\0");
    let (lines, exit) = play_helper(&sim, b"a ping\nb tree\nc idle 10 100\n").await;
    assert_eq!(exit, vec![0]);
    assert_eq!(lines[1], "a ok pong");
    assert!(lines[2].starts_with("b ok xml "), "{lines:?}");
    assert_eq!(lines[3], "c ok idle 10");
    // A running helper is listed by `ps` and ends (status 137) when killed.
    let (mut h, _) = Host::connect(sim.addr(), MAX_PAYLOAD).await;
    let remote = h.open(1, &helper_cmd("/data/local/tmp/xagent-helper-0123456789abcdef.dex")).await;
    let greeting = loop {
        let m = h.recv().await.unwrap();
        if m.command == A_WRTE {
            h.send(A_OKAY, 1, remote, &[]).await;
            break m.data;
        }
    };
    assert!(String::from_utf8_lossy(&greeting).contains(&format!("* hello 1 {} 34 ", super::helper::VERSION)));
    let ps = {
        let mut d = sim.device();
        super::commands::run_line(&mut d, "ps -A -o PID,ARGS", &[])
    };
    let ps = String::from_utf8(ps.stdout).unwrap();
    let line = ps.lines().find(|l| l.ends_with("app_process / xagent.Helper")).expect("listed");
    let pid = line.split_whitespace().next().unwrap().to_owned();
    let killed = super::commands::run_line(&mut sim.device(), &format!("kill -9 {pid}"), &[]);
    assert_eq!(killed.status, 0);
    let data = h.read_to_close(1, remote).await;
    assert_eq!(v2_packets(&data).last(), Some(&(ID_EXIT, vec![137])));
}
