//! Cancellable device I/O (issue 11), end to end: the real connector binary, a real adb server, simulated phones
//! with the per-command stall fault. A stuck command is hung up at its deadline (or when its channel closes or its
//! socket drops), the phone's next side effect runs at once, and no thread stays behind.

mod common;

use std::time::{Duration, Instant};

use common::adb::*;
use common::rig::Rig;
use common::*;
use serde_json::{json, Value};
use xagent_adb_connector::device::adb::AdbBackend;
use xagent_adb_connector::device::DeviceKey;
use xagent_adb_connector::sim::{InputEvent, SimConfig};

fn bounded<F: std::future::Future>(f: F) -> tokio::time::Timeout<F> {
    tokio::time::timeout(Duration::from_secs(180), f)
}

/// Polls `cond` every 20 ms until it holds; panics with `what` after `within`.
async fn eventually(within: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(Instant::now() < deadline, "never happened within {within:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// `Threads:` of /proc/PID/status.
fn threads(pid: u32) -> usize {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines().find_map(|l| l.strip_prefix("Threads:")).unwrap().trim().parse().unwrap()
}

/// Reads the channel until `n` `android_ui_dump` calls have answered, each without an error and with elements.
async fn every_dump_answers_with_elements(r: &mut Rig, n: usize) {
    let mut done = 0;
    while done < n {
        let v = r.c.recv().await;
        if v["type"] == "tool.invoke.ack" {
            assert!(v.get("error").is_none(), "{v}");
            assert!(v["payload"]["result"]["count"].as_u64().unwrap() > 0, "{v}");
            done += 1;
        }
    }
}

async fn rig(cfg: SimConfig, extra: &[&str]) -> Rig {
    Rig::with(cfg, extra, None).await
}

/// The shell path (`--phone-helper off`, and every fallback), with `extra` after it. The sim's stall fault holds a
/// shell command or stream by its prefix (`input`, `uiautomator`, `sync:RECV`, …); with the helper on (the default)
/// taps and UI reads go over the helper's one resident stream instead, which these tests cannot hold verb by verb.
async fn shell_rig(cfg: SimConfig, extra: &[&str]) -> Rig {
    let mut flags = vec!["--phone-helper", "off"];
    flags.extend_from_slice(extra);
    Rig::with(cfg, &flags, None).await
}

impl Rig {
    /// A tap that must succeed within 1 s (the phone is not wedged by an earlier stuck command).
    async fn prompt_tap(&mut self, x: i64) {
        let t0 = Instant::now();
        self.ok("android_tap", json!({"x": x, "y": 10})).await;
        let took = t0.elapsed();
        assert!(took <= Duration::from_secs(1), "the next side effect waited {took:?}");
        assert_eq!(self.sim.events().last(), Some(&InputEvent::Tap { x: x as i32, y: 10 }));
    }

    async fn upload(&self, filename: &str, data: &[u8]) -> String {
        let boundary = "----xagent-cancel-test";
        let mut body = format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n\
             Content-Type: application/octet-stream\r\n\r\n"
        )
        .into_bytes();
        body.extend_from_slice(data);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let ct = format!("multipart/form-data; boundary={boundary}");
        let headers = [("Content-Type", ct.as_str()), ("X-XAgent-Connector-Channel-ID", self.ch.as_str())];
        let r = http(self.srv.addr, "POST", "/files/uploads", &headers, &body).await;
        assert_eq!(r.status, 200, "upload failed: {}", r.text());
        r.json()["file_ref"].as_str().unwrap().to_owned()
    }
}

/// Every tool family, stalled on the phone: `device_timeout` at the (capped, 3 s) deadline, the stalled stream
/// closed by the connector (the sim records the hang-up), the next side effect at once, no thread left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalled_commands_are_hung_up_at_the_deadline_and_the_phone_recovers() {
    bounded(async {
        // The shell path: its commands are what the stall fault holds (see `shell_rig`).
        let mut r = shell_rig(SimConfig::default(), &["--tool-deadline-max", "3s"]).await;
        let pid = r.srv.child.id();
        let mut apk = b"PK\x03\x04".to_vec();
        apk.extend(vec![7u8; 200_000]);
        let apk_ref = r.upload("app.apk", &apk).await;
        let file_ref = r.upload("notes.txt", b"hello phone").await;
        r.sim.write_file("/sdcard/Download/big.bin", &[1u8; 4096]);
        // Warm-up (screen size cached, worker and blocking threads as in steady state). No screenshot: encoding one
        // in a debug build on a loaded machine can take longer than the test's short deadline.
        r.ok("android_device_status", json!({})).await;
        r.ok("android_file_pull", json!({"path": "/sdcard/Download/big.bin"})).await;
        let baseline = threads(pid);

        let families: [(&str, Value, &str); 6] = [
            ("android_tap", json!({"x": 5, "y": 5}), "input"),
            ("android_ui_dump", json!({}), "uiautomator"),
            // The capture's first command on an 8-CPU Android 14 phone: the frame to a temp file (issue 24).
            ("android_screenshot", json!({}), "umask 077; screencap"),
            ("android_app_install", json!({"file_ref": apk_ref}), "pm install"),
            ("android_file_push", json!({"file_ref": file_ref, "path": "/sdcard/Download/n.txt"}), "sync:SEND"),
            ("android_file_pull", json!({"path": "/sdcard/Download/big.bin"}), "sync:RECV"),
        ];
        for (i, (tool, args, stall)) in families.into_iter().enumerate() {
            r.sim.stall(stall);
            let before = r.sim.hung_up().len();
            let t0 = Instant::now();
            let a = r.invoke_raw(tool, args).await;
            assert_eq!(error_code(&a), "device_timeout", "{tool}: {a}");
            assert!(t0.elapsed() < Duration::from_secs(6), "{tool} answered after {:?}", t0.elapsed());
            let sim = r.sim.clone();
            eventually(Duration::from_secs(3), &format!("{tool}: the stalled `{stall}` stream is closed"), || {
                sim.hung_up().len() > before && sim.hung_up().last().unwrap().starts_with(stall)
            })
            .await;
            assert!(r.sim.stalled().is_empty(), "{tool}: nothing is left running on the phone");
            // The stuck command was hung up (it would never have finished): the next side effect runs at once.
            r.sim.release(stall);
            r.prompt_tap(100 + i as i64).await;
        }
        // Bounded: no thread per stuck call. Eight stuck observations at once (each parked a blocking thread before).
        r.sim.stall("sync:RECV");
        let mut ids = Vec::new();
        for _ in 0..8 {
            let ch = r.ch.clone();
            let args = json!({"connector_channel_id": ch, "path": "/sdcard/Download/big.bin"});
            ids.push(
                r.c.send("tool.invoke", Some(&ch), json!({"tool_id": "android_file_pull", "arguments": args})).await.1,
            );
        }
        let sim = r.sim.clone();
        eventually(Duration::from_secs(5), "eight pulls held on the phone", || sim.stalled().len() == 8).await;
        let during = threads(pid);
        let mut timeouts = 0;
        while timeouts < 8 {
            let v = r.c.recv().await;
            if v["type"] == "tool.invoke.ack" {
                assert_eq!(error_code(&v), "device_timeout", "{v}");
                timeouts += 1;
            }
        }
        eventually(Duration::from_secs(3), "all eight streams closed", || sim.stalled().is_empty()).await;
        let pid2 = pid;
        eventually(Duration::from_secs(2), "thread count back to baseline", || threads(pid2) <= baseline + 1).await;
        assert!(during <= baseline + 1, "stuck calls took threads: {baseline} → {during}");
        r.sim.release("sync:RECV");
        r.prompt_tap(300).await;
    })
    .await
    .expect("timed out");
}

/// A call whose data plane disconnects, or whose channel is closed, is cancelled at once (long before its 10 s
/// deadline): its device command is hung up and the phone's next side effect runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_socket_or_closed_channel_hangs_up_the_running_call() {
    bounded(async {
        // The shell path: the stuck `input` and `uiautomator` are shell commands (see `shell_rig`).
        let mut r = shell_rig(SimConfig::default(), &[]).await;
        r.ok("android_device_status", json!({})).await;

        // 1. The WebSocket drops while a tap is stuck on the phone.
        r.sim.stall("input");
        let ch = r.ch.clone();
        let args = json!({"connector_channel_id": ch, "x": 1, "y": 1});
        r.c.send("tool.invoke", Some(&ch), json!({"tool_id": "android_tap", "arguments": args})).await;
        let sim = r.sim.clone();
        eventually(Duration::from_secs(5), "the tap is held on the phone", || sim.stalled().len() == 1).await;
        let t0 = Instant::now();
        drop(std::mem::replace(&mut r.c, ws(r.srv.addr, None).await));
        eventually(Duration::from_secs(3), "the stuck tap is hung up", || sim.hung_up().len() == 1).await;
        assert!(t0.elapsed() < Duration::from_secs(5), "cancelled at once, not at the deadline");
        r.sim.release("input");
        // The same xAgent comes back on a new socket: its channel and binding survived, the phone is free.
        let cid = r.cid.clone();
        r.c.hello(Some(&cid)).await;
        r.c.open(Some(&ch)).await;
        r.prompt_tap(20).await;

        // 2. channel.close while a UI dump is stuck: the call ends (acked as cancelled) and the dump is hung up.
        r.sim.stall("uiautomator");
        let args = json!({"connector_channel_id": ch});
        let (_, rid) =
            r.c.send("tool.invoke", Some(&ch), json!({"tool_id": "android_ui_dump", "arguments": args})).await;
        eventually(Duration::from_secs(5), "the dump is held on the phone", || sim.stalled().len() == 1).await;
        let t0 = Instant::now();
        r.c.send("channel.close", Some(&ch), json!({})).await;
        let mut acked = false;
        while !acked {
            let v = r.c.recv().await;
            if v["request_id"] == json!(rid) {
                assert_eq!(v["type"], "tool.invoke.ack");
                assert!(v["error"]["message"].as_str().unwrap().contains("cancelled"), "{v}");
                acked = true;
            }
        }
        eventually(Duration::from_secs(3), "the stuck dump is hung up", || sim.hung_up().len() == 2).await;
        assert!(t0.elapsed() < Duration::from_secs(5));
        r.sim.release("uiautomator");
        let _ = r.adb.port;
    })
    .await
    .expect("timed out");
}

/// Phones without the shell protocol v2 (`shell:` only): tools work, and exit statuses come from the tagged status
/// line; on a v2 phone they come from the exit packet with stderr apart. Driven in-process through the real adb
/// server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shell_only_phones_work_and_exit_codes_are_real() {
    bounded(async {
        for shell_v2 in [false, true] {
            let (adb, sim, serial) = setup_with(SimConfig { shell_v2, ..SimConfig::default() }).await.expect("adb");
            let backend = AdbBackend::new(vec![format!("127.0.0.1:{}", adb.port).parse().unwrap()]);
            let key = DeviceKey { server: format!("127.0.0.1:{}", adb.port), serial };
            let t = Duration::from_secs(10);
            let out = backend.shell(&key, "echo out; echo err >&2; exit 3", false, t).await.unwrap();
            assert_eq!(out.code, 3, "v2={shell_v2}: {out:?}");
            if shell_v2 {
                assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("out\n", "err\n"));
            } else {
                assert_eq!(out.stdout, "out\nerr\n", "stderr is merged on shell: phones");
            }
            // Output that imitates a status line cannot forge the status.
            let out = backend.shell(&key, "echo __xagent_status_0000__0; false", false, t).await.unwrap();
            assert_eq!(out.code, 1, "v2={shell_v2}: {out:?}");
            assert_eq!(backend.shell_ok(&key, "getprop ro.product.model", false, t).await.unwrap(), "Pixel 7 (sim)\n");
            let e = backend.shell_ok(&key, "ls /nope", false, t).await.unwrap_err();
            assert!(e.message.contains("exit 1"), "{e:?}");
            assert_eq!(backend.screen_size(&key).await.unwrap(), (1080, 2400));
            drop(sim);
        }
        // Through the binary: a shell:-only phone binds, taps, dumps its UI and installs nothing it should not.
        let mut r = rig(SimConfig { shell_v2: false, ..SimConfig::default() }, &[]).await;
        r.ok("android_device_status", json!({})).await;
        r.prompt_tap(7).await;
        let d = r.ok("android_ui_dump", json!({})).await;
        assert!(d["count"].as_u64().unwrap() > 0, "{d}");
        let e = r.invoke_raw("android_app_launch", json!({"package": "com.example.missing"})).await;
        assert!(e.get("error").is_some(), "{e}");
    })
    .await
    .expect("timed out");
}

/// Eight concurrent UI dumps on one phone: one `uiautomator dump` in flight at a time, every caller gets the
/// elements, the phone runs fewer dumps than calls and keeps no dump file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_ui_dumps_share_one_dump() {
    bounded(async {
        // The shell path: what is counted and held is `uiautomator dump` (see `shell_rig`); the helper-on outcome is
        // `concurrent_ui_dumps_all_answer_with_the_helper`.
        let mut r = shell_rig(SimConfig::default(), &[]).await;
        r.sim.stall("uiautomator");
        let ch = r.ch.clone();
        let mut ids = Vec::new();
        for _ in 0..8 {
            let args = json!({"connector_channel_id": ch});
            ids.push(
                r.c.send("tool.invoke", Some(&ch), json!({"tool_id": "android_ui_dump", "arguments": args})).await.1,
            );
        }
        let sim = r.sim.clone();
        eventually(Duration::from_secs(5), "a dump is held on the phone", || !sim.stalled().is_empty()).await;
        // Let every call arrive and join (they are dispatched in order right behind the first).
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(r.sim.stalled().len(), 1, "one dump in flight per phone: {:?}", r.sim.stalled());
        r.sim.release("uiautomator");
        every_dump_answers_with_elements(&mut r, 8).await;
        let dumps = r.sim.commands().iter().filter(|c| c.contains("uiautomator dump")).count();
        assert!(dumps < 8, "8 calls ran {dumps} dumps");
        assert!(dumps <= 2, "callers share the dump in flight (or the next one): {dumps}");
        let leftovers: Vec<String> =
            r.sim.commands().iter().filter(|c| c.contains("xagent_window_dump")).cloned().collect();
        assert!(leftovers.is_empty(), "no fixed dump file: {leftovers:?}");
        assert!(r.sim.read_file("/sdcard/window_dump.xml").is_none());
    })
    .await
    .expect("timed out");
}

/// The default (the helper on): eight concurrent UI dumps on one phone all answer with the elements, and the phone
/// keeps no dump file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_ui_dumps_all_answer_with_the_helper() {
    bounded(async {
        let mut r = rig(SimConfig::default(), &[]).await;
        let ch = r.ch.clone();
        for _ in 0..8 {
            let args = json!({"connector_channel_id": ch});
            r.c.send("tool.invoke", Some(&ch), json!({"tool_id": "android_ui_dump", "arguments": args})).await;
        }
        every_dump_answers_with_elements(&mut r, 8).await;
        assert!(r.sim.commands().iter().any(|c| c.contains("xagent.Helper")), "the helper ran: {:?}", r.sim.commands());
        assert!(r.sim.read_file("/sdcard/window_dump.xml").is_none());
    })
    .await
    .expect("timed out");
}

/// A phone whose `uiautomator dump /dev/tty` prints no XML: the dump goes through a per-call file that is removed.
/// The shell path's own fallback (`--phone-helper off`); with the helper on the same phone's dumps answer too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ui_dump_falls_back_to_a_per_call_file() {
    bounded(async {
        let mut r = rig(SimConfig { dump_to_tty: false, ..SimConfig::default() }, &[]).await;
        for _ in 0..2 {
            let d = r.ok("android_ui_dump", json!({})).await;
            assert!(d["count"].as_u64().unwrap() > 0, "helper on: {d}");
        }
        let mut r = shell_rig(SimConfig { dump_to_tty: false, ..SimConfig::default() }, &[]).await;
        for _ in 0..2 {
            let d = r.ok("android_ui_dump", json!({})).await;
            assert!(d["count"].as_u64().unwrap() > 0, "{d}");
        }
        let cmds = r.sim.commands();
        let files: Vec<&String> = cmds.iter().filter(|c| c.contains("/sdcard/xagent-dump-")).collect();
        assert_eq!(files.len(), 2, "one per-call file per dump, /dev/tty tried once: {cmds:?}");
        assert_ne!(files[0], files[1], "never the same path twice");
        assert_eq!(cmds.iter().filter(|c| c.contains("dump /dev/tty")).count(), 1);
        for f in files {
            let path = f.split_whitespace().nth(2).unwrap();
            assert!(r.sim.read_file(path).is_none(), "{path} was removed");
        }
    })
    .await
    .expect("timed out");
}

/// A channel binding right after start-up, while the phone is still being verified (its `getprop` takes 1.5 s),
/// waits for the verification instead of answering `device_offline` / `device_not_found`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_during_verification_waits_for_it() {
    bounded(async {
        let (adb, sim, serial) = setup().await.expect("adb");
        sim.set_fault(xagent_adb_connector::sim::Fault::Latency(Duration::from_millis(1500)));
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(dir.path(), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        let (ch, _) = c.open(None).await;
        let t0 = Instant::now();
        let a = c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": {"serial": serial}})).await;
        assert_eq!(a["payload"]["status"], "authenticated", "{a}");
        assert!(t0.elapsed() < Duration::from_secs(6), "bounded wait: {:?}", t0.elapsed());
        sim.set_fault(xagent_adb_connector::sim::Fault::None);
        // Without a free device, the answer is not delayed once the list has settled (and says why: the only
        // phone is held by the first channel).
        let (ch2, _) = c.open(None).await;
        let t0 = Instant::now();
        let a = c.request("auth.start", Some(&ch2), json!({"flow_id": "adb_device"})).await;
        assert_eq!(error_code(&a), "device_busy", "{a}");
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    })
    .await
    .expect("timed out");
}

/// SIGTERM: a call stuck on the phone may run until the drain deadline, then it is cancelled — acked
/// `shutting_down`, its device command hung up — and the connector exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drain_deadline_cancels_stuck_calls() {
    bounded(async {
        // The shell path: the stuck `input` is a shell command (see `shell_rig`).
        let mut r = shell_rig(SimConfig::default(), &["--drain-timeout", "1s"]).await;
        r.ok("android_device_status", json!({})).await;
        r.sim.stall("input");
        let ch = r.ch.clone();
        let args = json!({"connector_channel_id": ch, "x": 3, "y": 3});
        let (_, rid) = r.c.send("tool.invoke", Some(&ch), json!({"tool_id": "android_tap", "arguments": args})).await;
        let sim = r.sim.clone();
        eventually(Duration::from_secs(5), "the tap is held on the phone", || sim.stalled().len() == 1).await;
        let mut srv = r.srv;
        let term = tokio::task::spawn_blocking(move || {
            let st = srv.term(Duration::from_secs(15));
            (st, srv)
        });
        let ack = loop {
            let v = r.c.recv().await;
            if v["request_id"] == json!(rid) {
                break v;
            }
        };
        assert_eq!(error_code(&ack), "shutting_down", "{ack}");
        eventually(Duration::from_secs(3), "the stuck tap is hung up", || sim.hung_up().len() == 1).await;
        let (st, _srv) = term.await.unwrap();
        assert!(st.is_some_and(|s| s.success()), "clean exit after the drain: {st:?}");
        assert!(r.sim.events().is_empty(), "the cancelled tap never ran");
    })
    .await
    .expect("timed out");
}
