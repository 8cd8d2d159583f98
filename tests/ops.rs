//! Operator commands through the real binary: `demo` (and the commands it prints), `call`, `devices`, `doctor`,
//! `sim`, and `GET /metrics`.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::adb::*;
use common::*;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_xagent-adb-connector");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Starts `demo` with `extra` flags and reads its stdout until the hand-over block is complete.
fn start_demo(port: u16, data_dir: &std::path::Path, extra: &[&str]) -> (std::process::Child, Vec<String>) {
    let listen = format!("127.0.0.1:{port}");
    let mut args = vec!["--listen", listen.as_str(), "--phones", "2"];
    args.extend_from_slice(extra);
    start_demo_with(data_dir, &args)
}

/// Starts `demo --data-dir DIR ARGS…` and reads its stdout until the hand-over block is complete.
fn start_demo_with(data_dir: &std::path::Path, args: &[&str]) -> (std::process::Child, Vec<String>) {
    let mut child = Command::new(BIN)
        .args(["demo", "--data-dir"])
        .arg(data_dir)
        .args(args)
        .env_remove("XAGENT_CONNECTOR_API_KEY")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(90);
    let mut lines = Vec::new();
    // The hand-over ends with the line about `call --help`.
    while !lines.iter().any(|l: &String| l.contains("`call --help`")) {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) => lines.push(l),
            Err(_) => {
                let _ = child.kill();
                panic!("the demo did not finish its tour: {lines:#?}");
            }
        }
    }
    (child, lines)
}

/// SIGTERM, then the exit status (bounded).
fn stop(mut child: std::process::Child) -> std::process::ExitStatus {
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the demo did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `adb -P PORT ARGS…` against the demo's private adb server (its port from the hand-over's last line).
fn demo_adb(lines: &[String], args: &[&str]) -> String {
    let last = lines.iter().find(|l| l.contains("`adb -P ")).expect("the adb line");
    let port = last.split("`adb -P ").nth(1).and_then(|r| r.split(' ').next()).expect("a port");
    let out = Command::new("adb").args(["-P", port]).args(args).output().unwrap();
    assert!(out.status.success(), "adb {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// On a Pi the installed connector holds 8790: the demo then takes a free port and says so (a `--listen` that is
/// taken stays an error); its phones differ, and its tour leaves every one of them clean.
#[test]
fn demo_moves_off_a_taken_default_port_with_phones_that_differ_and_left_clean() {
    let dir = tempfile::tempdir().unwrap();
    // Held for the whole test; when something else holds it already, it is just as taken.
    let _taken = std::net::TcpListener::bind("127.0.0.1:8790");
    let (child, lines) = start_demo_with(&dir.path().join("demo"), &["--phones", "3"]);
    let text = lines.join("\n");
    assert!(text.contains("127.0.0.1:8790 is taken"), "{text}");
    let url = lines.iter().find_map(|l| l.trim().strip_prefix("connector on ")).expect("the connector's URL");
    assert!(url.starts_with("http://127.0.0.1:") && !url.ends_with(":8790"), "{url}");
    assert!(text.contains(&format!("--url {url}")), "the printed commands use the port taken: {text}");

    let serials: Vec<String> = demo_adb(&lines, &["devices"])
        .lines()
        .filter(|l| l.ends_with("\tdevice"))
        .map(|l| l.split('\t').next().unwrap().to_owned())
        .collect();
    assert_eq!(serials.len(), 3, "{lines:#?}");
    let mut kinds = std::collections::BTreeSet::new();
    for s in &serials {
        let props = demo_adb(
            &lines,
            &["-s", s, "shell", "getprop ro.product.model; getprop ro.build.version.release; wm size"],
        );
        kinds.insert(props.clone());
        // The tour tapped Increment on one of them and tidied up: every phone shows "Count: 0" on the home screen.
        let xml = demo_adb(&lines, &["-s", s, "exec-out", "uiautomator", "dump", "/dev/tty"]);
        assert!(xml.contains("text=\"Count: 0\""), "{props}{xml}");
        assert!(xml.contains("package=\"com.android.launcher3\""), "{props}{xml}");
    }
    assert_eq!(kinds.len(), 3, "three phones, three kinds: {kinds:#?}");
    assert!(kinds.iter().any(|k| k.starts_with("Galaxy A54\n13\n")), "{kinds:#?}");

    // An address asked for is not moved: it fails, saying why.
    let mut taken = Command::new(BIN)
        .args(["demo", "--phones", "1", "--listen", url.trim_start_matches("http://"), "--data-dir"])
        .arg(dir.path().join("second"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(st) = taken.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = taken.kill();
            panic!("a demo on a taken --listen did not give up");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut taken.stderr.take().unwrap(), &mut err).unwrap();
    assert!(!status.success() && err.contains("already in use") && err.contains("--listen"), "{status:?}: {err}");

    let status = stop(child);
    assert!(status.success(), "{status:?}");
}

/// After the tour a scripted agent keeps one phone held and its screen changing, so the wall shows the product at
/// work; SIGTERM stops it cleanly: it presses Home and gives the phone back before the connector drains.
#[test]
fn demo_agent_keeps_a_phone_busy_until_it_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("demo");
    let (child, lines) = start_demo(free_port(), &data, &[]);
    assert!(lines.iter().any(|l| l.contains("scripted agent now holds one phone")), "{lines:#?}");
    let serials: Vec<String> = demo_adb(&lines, &["devices"])
        .lines()
        .filter(|l| l.ends_with("\tdevice"))
        .map(|l| l.split('\t').next().unwrap().to_owned())
        .collect();
    let counts = || -> Vec<String> {
        serials
            .iter()
            .map(|s| {
                let xml = demo_adb(&lines, &["-s", s, "exec-out", "uiautomator", "dump", "/dev/tty"]);
                xml.split("text=\"Count: ").nth(1).and_then(|r| r.split('"').next()).unwrap_or("?").to_owned()
            })
            .collect()
    };
    let first = counts();
    let deadline = Instant::now() + Duration::from_secs(15);
    while counts() == first {
        assert!(Instant::now() < deadline, "no phone's screen changed in 15 s: {first:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    let status = stop(child);
    assert!(status.success(), "{status:?}");
    // The agent's last acts are in the audit log: Home (after the tour's own) and the logout that freed the phone.
    let out = Command::new(BIN).args(["audit", "tail", "--data-dir"]).arg(&data).output().unwrap();
    let tail = String::from_utf8_lossy(&out.stdout);
    assert!(tail.matches("android_key").count() >= 2, "the agent did not tidy up on SIGTERM:\n{tail}");
}

/// Issue 50: the demo keeps its terminal for the guide — its log goes to `demo.log` in the state dir, Enter prints
/// the ready-to-paste lines again, and stopping says what was stopped.
#[test]
fn demo_keeps_the_terminal_for_its_guide_and_says_what_it_stopped() {
    use std::io::Write;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("demo");
    let stderr = std::fs::File::create(dir.path().join("stderr")).unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let mut child = Command::new(BIN)
        .args(["demo", "--data-dir"])
        .arg(&data)
        .args(["--listen", &listen, "--phones", "2"])
        .env_remove("XAGENT_CONNECTOR_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let read_until = |what: &str, secs: u64| -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut got = Vec::new();
        while !got.iter().any(|l: &String| l.contains(what)) {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(l) => got.push(l),
                Err(_) => panic!("no {what:?} within {secs} s: {got:#?}"),
            }
        }
        got
    };
    let first = read_until("Enter prints these lines again", 90);
    assert!(first.iter().any(|l| l.contains("demo.log")), "{first:#?}");
    // The agent acts every 2 s (each call an INFO record): they go to the file, not the terminal.
    std::thread::sleep(Duration::from_secs(5));
    child.stdin.as_mut().unwrap().write_all(b"\n").unwrap();
    let again = read_until("`call --help`", 20);
    assert!(again.iter().any(|l| l.contains("call android_tap")), "the guide again: {again:#?}");
    let status = stop(child);
    assert!(status.success(), "{status:?}");
    let last = read_until("Stopped:", 20);
    assert!(last.last().unwrap().contains("simulated phones ended"), "{last:#?}");
    let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap();
    assert!(!err.contains("INFO"), "log records on the terminal:\n{err}");
    let log = std::fs::read_to_string(data.join("demo.log")).unwrap();
    assert!(log.matches("tool ok").count() >= 2, "the agent's calls are in demo.log:\n{log}");
}

/// One HTTP/1.1 request on loopback with the bearer key: (status, body).
fn http_bearer(addr: &str, method: &str, path: &str, key: &str, body: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    // A chunked body: its JSON lies between the chunk sizes.
    let json = body.find('{').map(|i| &body[i..body.rfind('}').map_or(body.len(), |j| j + 1)]).unwrap_or("");
    (status, json.to_owned())
}

/// Issue 50: a takeover on the wall does not end the demo's scripted agent: it waits, and once the operator
/// returns the phone it acts on it again (it used to quit at the first refusal, so "Return to agent" returned the
/// phone to nobody).
#[test]
fn demo_agent_waits_through_a_takeover_and_acts_again_on_return() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, "demo-takeover-key-0123456789\n").unwrap();
    let port = free_port();
    let (child, lines) = start_demo(port, &dir.path().join("demo"), &["--api-key-file", key_file.to_str().unwrap()]);
    let addr = format!("127.0.0.1:{port}");
    let key = "demo-takeover-key-0123456789";
    let (code, devices) = http_bearer(&addr, "GET", "/api/v1/devices", key, "");
    assert_eq!(code, 200, "{devices}");
    let devices: serde_json::Value = serde_json::from_str(&devices).unwrap();
    let held = devices["devices"].as_array().unwrap().iter().find(|d| !d["held_by"].is_null()).expect("a held phone");
    let (id, serial) = (held["id"].as_str().unwrap().to_owned(), held["serial"].as_str().unwrap().to_owned());
    let count = || -> String {
        let xml = demo_adb(&lines, &["-s", &serial, "exec-out", "uiautomator", "dump", "/dev/tty"]);
        xml.split("text=\"Count: ").nth(1).and_then(|r| r.split('"').next()).unwrap_or("?").to_owned()
    };
    let (code, body) = http_bearer(&addr, "POST", &format!("/api/v1/devices/{id}/takeover"), key, "{}");
    assert_eq!(code, 200, "{body}");
    // Past a few of the agent's steps: it is refused (operator_control) and waits.
    std::thread::sleep(Duration::from_secs(5));
    let during = count();
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(count(), during, "nothing acts on a phone an operator holds");
    let (code, body) = http_bearer(&addr, "POST", &format!("/api/v1/devices/{id}/return"), key, "{}");
    assert_eq!(code, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(20);
    while count() == during {
        assert!(Instant::now() < deadline, "the agent never acted again after the return");
        std::thread::sleep(Duration::from_millis(500));
    }
    let status = stop(child);
    assert!(status.success(), "{status:?}");
}

#[test]
fn demo_drives_a_simulated_phone_end_to_end_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let (child, lines) = start_demo(port, &dir.path().join("demo"), &[]);
    let text = lines.join("\n");
    for needle in ["2 simulated phone(s)", "auth.start adb_device", "\"Increment\" at", "android_tap", "found after"] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
    assert!(!text.contains("websocat") && !text.contains("session.jsonl"), "no commands that cannot work:\n{text}");
    // It keeps serving for the newcomer to poke at.
    let card = std::process::Command::new("curl").args(["-sf", &format!("http://127.0.0.1:{port}/health")]).output();
    if let Ok(out) = card {
        if out.status.success() {
            assert!(String::from_utf8_lossy(&out.stdout).contains("\"devices_online\":2"));
        }
    }
    let status = stop(child);
    assert!(status.success(), "{status:?}");
}

/// The demo hands over: every command line it prints (devices, doctor, audit tail, call, curl) is run exactly as
/// printed, by a shell, and must succeed — against a demo protected by an API key.
#[test]
fn demo_hand_over_commands_work_as_printed() {
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("demo key"); // a space: the printed lines must quote it
    std::fs::write(&key_file, "demo-key-0123456789\n").unwrap();
    let port = free_port();
    let (child, lines) =
        start_demo(port, &dir.path().join("demo state"), &["--api-key-file", key_file.to_str().unwrap()]);
    let start = lines.iter().position(|l| l.contains("Now try it yourself")).expect("hand-over block");
    let commands: Vec<String> = lines[start + 1..]
        .iter()
        .map(|l| l.trim().to_owned())
        .filter(|l| l.starts_with(BIN) || l.starts_with("curl "))
        .collect();
    let find = |needle: &str| -> String {
        commands
            .iter()
            .find(|c| c.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} line in {lines:#?}"))
            .clone()
    };
    let cwd = tempfile::tempdir().unwrap();
    let run = |cmd: &str| -> (i32, String, String) {
        let out = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .current_dir(cwd.path())
            .env_remove("XAGENT_CONNECTOR_API_KEY")
            .env_remove("XAGENT_ADB_API_KEY_FILE")
            .env("XAGENT_ADB_CONFIG_DIR", dir.path().join("no-installed-service"))
            .output()
            .unwrap();
        let (o, e) =
            (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string());
        (out.status.code().unwrap_or(-1), o, e)
    };

    let (code, out, err) = run(&find(" devices --adb-server "));
    assert_eq!(code, 0, "{out}{err}");
    let phones: Vec<&str> = out.lines().filter(|l| l.contains(" device ")).collect();
    assert_eq!(phones.len(), 2, "{out}");
    // adb lists the model with every non-alphanumeric character as `_`; the demo's phones have real model names,
    // so the column reads like a real phone's (not "Pixel 7  sim 2"), and the two phones are different ones.
    let mut models: Vec<&str> =
        phones.iter().filter_map(|l| l.split("  ").map(str::trim).filter(|c| !c.is_empty()).nth(3)).collect();
    models.sort_unstable();
    assert_eq!(models, ["Galaxy A54", "Pixel 7"], "{out}");

    let (code, out, err) = run(&find(" doctor --adb-server "));
    assert_eq!(code, 0, "doctor must pass against the running demo:\n{out}{err}");
    assert!(out.contains("a connector is running on") && out.contains("2 device(s) online"), "{out}");
    assert!(out.contains("ok    system API key configured"), "{out}");

    let (code, out, err) = run(&find(" call android_tap "));
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["element"]["text"], "Increment", "{out}");

    let (code, out, err) = run(&find(" call android_ui_dump "));
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["elements"].as_array().unwrap().iter().any(|e| e["text"] == "Increment"), "{out}");

    let (code, out, err) = run(&find(" call android_screenshot "));
    assert_eq!(code, 0, "{out}{err}");
    // The file goes to the demo's state dir, not wherever the newcomer stands (a checkout).
    assert!(!cwd.path().join("screen.jpg").exists(), "the screenshot landed in the current directory");
    let jpeg = std::fs::read(dir.path().join("demo state/screen.jpg")).expect("--out wrote the screenshot");
    assert!(jpeg.starts_with(&[0xff, 0xd8]) && jpeg.len() > 1000, "not a JPEG: {} bytes", jpeg.len());
    assert!(err.contains("saved") && !err.contains("token="), "{err}");

    // Each call gave its phone back: only the demo's own agent still holds one, the other is free.
    let (code, out, err) = run(&find(" devices --adb-server "));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.lines().filter(|l| l.trim_end().ends_with(" -")).count(), 1, "a call kept its phone:\n{out}");

    // More than the default 20 records: every bind and release of the tour's calls is audited too (issue 47).
    let (code, out, err) = run(&format!("{} -n 100", find(" audit tail ")));
    assert_eq!(code, 0, "{out}{err}");
    for tool in ["android_ui_dump", "android_tap", "android_ui_wait", "android_screenshot"] {
        assert!(out.contains(tool), "{tool} missing from the audit tail:\n{out}");
    }
    // The columns line up although cells differ in width (the tour's calls carry no tool_call_id, `call`'s do).
    let lines: Vec<&str> = out.lines().collect();
    let seq_end = lines[0].find("SEQ").unwrap() + 3;
    let starts = |l: &str| -> Vec<usize> {
        let c: Vec<char> = l.chars().collect();
        (seq_end..c.len()).filter(|&i| c[i] != ' ' && c[i - 1] == ' ' && c[i - 2] == ' ').collect()
    };
    for l in &lines[1..] {
        assert_eq!(starts(l), starts(lines[0]), "audit tail columns do not line up:\n{out}");
    }

    if Command::new("curl").arg("--version").output().is_ok_and(|o| o.status.success()) {
        // The curl line, found by its shape: a checkout in a folder named `health` has `/health` in every line.
        let health =
            commands.iter().find(|c| c.starts_with("curl ") && c.ends_with("/health")).expect("a curl of /health");
        let (code, out, err) = run(health);
        assert_eq!(code, 0, "{out}{err}");
        assert!(out.contains("\"status\":\"ok\""), "the printed curl carries the key: {out}");
    }

    // A call without the key says what to pass, and fails.
    let no_key = find(" call android_tap ").replace(&format!(" --api-key-file '{}'", key_file.display()), "");
    assert!(!no_key.contains("--api-key-file"), "{no_key}");
    let (code, out, err) = run(&no_key);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("--api-key-file"), "{err}");

    let status = stop(child);
    assert!(status.success(), "{status:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn devices_and_doctor_report_what_the_adb_server_sees() {
    let (adb, sim, serial) = setup().await.expect("adb");
    let dir = tempfile::tempdir().unwrap();
    let server = format!("127.0.0.1:{}", adb.port);
    let data = dir.path().join("data");
    let (s2, d2) = (server.clone(), data.clone());
    let out = blocking(move || {
        Command::new(BIN).args(["devices", "--adb-server", &s2, "--data-dir"]).arg(&d2).output().unwrap()
    })
    .await;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    assert!(text.lines().any(|l| l.contains(&serial) && l.contains("device")), "{text}");

    let port = free_port();
    let (s2, d2) = (server.clone(), data.clone());
    let out = blocking(move || {
        Command::new(BIN)
            .args(["doctor", "--adb-server", &s2, "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
            .arg(&d2)
            .env_remove("XAGENT_CONNECTOR_API_KEY")
            .output()
            .unwrap()
    })
    .await;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains(&format!("device {serial} online")), "{text}");
    assert!(text.contains("warn  no system API key"), "{text}");

    // An unreachable adb server and an unauthorized phone are failures with a fix each.
    sim.set_fault(xagent_adb_connector::sim::Fault::Unauthorized);
    sim.drop_connections();
    let (a, s) = (adb.clone(), serial.clone());
    blocking(move || {
        let _ = a.adb(&["disconnect", &s]);
        let _ = a.adb(&["connect", &s]);
        a.wait_state(&s, "unauthorized");
    })
    .await;
    let d2 = data.clone();
    let out = blocking(move || {
        Command::new(BIN)
            .args([
                "doctor",
                "--adb-server",
                &server,
                "--adb-server",
                "127.0.0.1:1",
                "--listen",
                "127.0.0.1:0",
                "--data-dir",
            ])
            .arg(&d2)
            .output()
            .unwrap()
    })
    .await;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("is unauthorized") && text.contains("Allow USB debugging"), "{text}");
    assert!(text.contains("FAIL  127.0.0.1:1: adb server unreachable"), "{text}");
    assert!(!text.contains("adb server 127.0.0.1:1: adb server"), "doubled wording:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_behind_the_key_and_count_tool_calls() {
    let (adb, _sim, _serial) = setup().await.expect("adb");
    let dir = tempfile::tempdir().unwrap();
    let kf = dir.path().join("key");
    std::fs::write(&kf, "k-123").unwrap();
    let srv = Server::start(
        &dir.path().join("data"),
        &["--adb-server", &format!("127.0.0.1:{}", adb.port), "--api-key-file", kf.to_str().unwrap()],
        &[],
    );
    assert_eq!(get(srv.addr, "/metrics").await.status, 401);
    let mut c = ws(srv.addr, Some("k-123")).await;
    c.hello(None).await;
    let ch = c.bind(None).await;
    for (x, y) in [(1, 1), (5000, 1)] {
        c.request(
            "tool.invoke",
            Some(&ch),
            json!({"tool_id": "android_tap", "arguments": {"connector_channel_id": ch, "x": x, "y": y}}),
        )
        .await;
    }
    let m = http(srv.addr, "GET", "/metrics", &[("Authorization", "Bearer k-123")], b"").await;
    assert_eq!(m.status, 200);
    assert!(m.header("content-type").unwrap().starts_with("text/plain"));
    let text = m.text();
    for needle in [
        "xagent_tool_calls_total{tool=\"android_tap\",result=\"ok\"} 1",
        "xagent_tool_calls_total{tool=\"android_tap\",result=\"invalid_arguments\"} 1",
        "xagent_tool_latency_seconds_count{tool=\"android_tap\"} 2",
        "xagent_devices{state=\"online\"} 1",
        "xagent_channels{status=\"connected\"} 1",
        "xagent_ws_connections 1",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in\n{text}");
    }
}

#[test]
fn sim_command_serves_phones_on_consecutive_ports() {
    let port = free_port();
    let mut child = Command::new(BIN)
        .args(["sim", "--listen", &format!("127.0.0.1:{port}"), "--count", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains(&format!("adb connect 127.0.0.1:{port}")), "{line}");
    // It speaks ADB: a CNXN gets a CNXN back.
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let banner = b"host::\0";
    let mut msg = Vec::new();
    for v in [
        0x4e584e43u32,
        0x01000001,
        256 * 1024,
        banner.len() as u32,
        banner.iter().map(|&b| b as u32).sum(),
        !0x4e584e43u32,
    ] {
        msg.extend_from_slice(&v.to_le_bytes());
    }
    msg.extend_from_slice(banner);
    s.write_all(&msg).unwrap();
    let mut head = [0u8; 24];
    s.read_exact(&mut head).unwrap();
    assert_eq!(&head[..4], b"CNXN");
    let _ = child.kill();
    let _ = child.wait();
}

/// Against a connector that has a key, doctor without the key says to pass `--api-key-file` — not "run sudo" (we
/// may be root already, and no file was unreadable) and not "every problem is a permission problem".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn doctor_without_the_key_of_a_keyed_connector_says_to_pass_it() {
    let dir = tempfile::tempdir().unwrap();
    let kf = dir.path().join("key");
    std::fs::write(&kf, "k-doctor-1").unwrap();
    // A reachable adb server: with none, /health turns `degraded` after 10 s and doctor would rightly say so.
    let Some(adb) = AdbServer::start() else { return };
    let adb_addr = format!("127.0.0.1:{}", adb.port);
    let srv = Server::start(
        &dir.path().join("data"),
        &["--api-key-file", kf.to_str().unwrap(), "--adb-server", &adb_addr],
        &[],
    );
    let (addr, data, conf) = (srv.addr, srv.data_dir.clone(), dir.path().join("no-installed-service"));
    let doctor = move |key: Option<std::path::PathBuf>| {
        let (data, conf) = (data.clone(), conf.clone());
        async move {
            blocking(move || {
                let mut cmd = Command::new(BIN);
                cmd.args(["doctor", "--adb-server", "127.0.0.1:1", "--listen", &addr.to_string(), "--data-dir"])
                    .arg(&data)
                    .env("XAGENT_ADB_CONFIG_DIR", &conf)
                    .env_remove("XAGENT_CONNECTOR_API_KEY")
                    .env_remove("XAGENT_ADB_API_KEY_FILE");
                if let Some(k) = key {
                    cmd.arg("--api-key-file").arg(k);
                }
                let out = cmd.output().unwrap();
                (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string())
            })
            .await
        }
    };
    let (code, text) = doctor(None).await;
    assert_eq!(code, Some(1), "{text}");
    let line =
        text.lines().skip_while(|l| !l.contains("a connector answers on")).take(2).collect::<Vec<_>>().join("\n");
    assert!(line.contains("wants its system API key") && line.contains("--api-key-file"), "{text}");
    assert!(!text.contains("sudo xagent-adb-connector doctor"), "no permission problem here:\n{text}");
    assert!(!text.contains("every problem is a permission problem"), "{text}");
    // With the key the same check passes.
    let (_, text) = doctor(Some(kf.clone())).await;
    assert!(text.contains(&format!("ok    a connector is running on {addr}")), "{text}");
}

/// Issue 50: a wrong key is not answered with "pass --api-key-file" as a missing one is (the user already did), and
/// both name the connector they reached; the key never appears.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_tells_a_wrong_key_from_a_missing_one() {
    let dir = tempfile::tempdir().unwrap();
    let kf = dir.path().join("key");
    std::fs::write(&kf, "k-call-right-1").unwrap();
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "k-call-wrong-2").unwrap();
    let srv = Server::start(&dir.path().join("data"), &["--api-key-file", kf.to_str().unwrap()], &[]);
    let url = format!("http://{}", srv.addr);
    let call = |key: Option<std::path::PathBuf>| {
        let url = url.clone();
        blocking(move || {
            let mut cmd = Command::new(BIN);
            cmd.args(["call", "android_device_status", "--url", &url])
                .env_remove("XAGENT_CONNECTOR_API_KEY")
                .env_remove("XAGENT_ADB_API_KEY_FILE")
                .env("XAGENT_ADB_CONFIG_DIR", "/nonexistent-xagent-config");
            if let Some(k) = key {
                cmd.arg("--api-key-file").arg(k);
            }
            let out = cmd.output().unwrap();
            (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
        })
    };
    let (code, missing) = call(None).await;
    assert_ne!(code, Some(0), "{missing}");
    assert!(missing.contains("wants its API key") && missing.contains("--api-key-file"), "{missing}");
    assert!(missing.contains(&srv.addr.to_string()), "names the connector: {missing}");
    let (code, refused) = call(Some(wrong)).await;
    assert_ne!(code, Some(0), "{refused}");
    assert!(refused.contains("refused the API key given") && !refused.contains("pass --api-key-file"), "{refused}");
    assert!(refused.contains(&srv.addr.to_string()), "{refused}");
    assert!(!refused.contains("k-call-wrong-2") && !refused.contains("k-call-right-1"), "{refused}");
}

/// `call` holds the phone only for the call: after a call that fails, times out or is interrupted (SIGINT), the
/// one phone is free for the next client at once (not after the hour of lease grace); and errors name their code.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_gives_the_phone_back_on_every_path() {
    let (adb, _sim, serial) = setup().await.expect("adb");
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(&dir.path().join("data"), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
    let url = format!("http://{}", srv.addr);
    let call = move |args: Vec<String>| {
        let url = url.clone();
        blocking(move || {
            let out = Command::new(BIN)
                .arg("call")
                .args(&args)
                .args(["--url", &url])
                .env("XAGENT_ADB_CONFIG_DIR", "/nonexistent-xagent-config")
                .env_remove("XAGENT_ADB_API_KEY_FILE")
                .output()
                .unwrap();
            let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
            (out.status.code(), text(&out.stdout), text(&out.stderr))
        })
    };
    let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // The tracker may still be verifying the phone: the first call retries auth.start for a while by itself.
    let (code, out, err) = call(w(&["android_tap", "x=10", "y=20", "--serial", &serial])).await;
    assert_eq!(code, Some(0), "{out}{err}");
    let tapped = serde_json::from_str::<serde_json::Value>(&out).unwrap();
    assert_eq!((&tapped["x"], &tapped["y"]), (&json!(10), &json!(20)), "{tapped}");
    // Issue 50: it names the phone (model, masked serial) and the connector it acted on.
    let bound = err.lines().find(|l| l.starts_with("bound ")).unwrap_or_default();
    assert!(bound.contains("Pixel") && bound.ends_with(&format!("on the connector at http://{}", srv.addr)), "{err}");
    assert!(!bound.contains(&serial), "the serial is masked: {bound}");
    // `call` sends what xAgent sends: the tap settles by default and says what it changed (nothing, in the bar).
    assert_eq!((&tapped["effect"]["foreground_changed"], &tapped["effect"]["settled"]), (&json!(false), &json!(true)));
    // A refused call: exit 1 with the error code; the phone is free again.
    let (code, _, err) = call(w(&["android_tap", "x=-5", "y=1"])).await;
    assert_eq!(code, Some(1));
    assert!(err.contains("android_tap: invalid_arguments:"), "{err}");
    // Past --timeout while the tool still runs.
    let (code, _, err) = call(w(&["android_ui_wait", "text=Never there", "timeout_ms=20000", "--timeout", "2s"])).await;
    assert_eq!(code, Some(1));
    assert!(err.contains("before the timeout"), "{err}");
    let (code, out, err) = call(w(&["android_tap", "x=1", "y=1"])).await;
    assert_eq!(code, Some(0), "the phone was not given back after the timeout: {out}{err}");
    // Interrupted with SIGINT (Ctrl-C) while the tool runs.
    let url = format!("http://{}", srv.addr);
    let status = blocking(move || {
        let mut child = Command::new(BIN)
            .args(["call", "android_ui_wait", "text=Never there", "timeout_ms=20000", "--url", &url])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(1500));
        let _ = Command::new("kill").args(["-INT", &child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                let mut err = String::new();
                std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
                break (st.code(), err);
            }
            assert!(Instant::now() < deadline, "call did not end on SIGINT");
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .await;
    assert_eq!(status.0, Some(1), "{}", status.1);
    assert!(status.1.contains("interrupted; the phone was released"), "{}", status.1);
    let (code, out, err) = call(w(&["android_tap", "x=2", "y=2"])).await;
    assert_eq!(code, Some(0), "the phone was not given back after Ctrl-C: {out}{err}");
    // Without --url: the connector of this box, from XAGENT_ADB_LISTEN (the installed service's env file sets it;
    // 0.0.0.0 is reached on loopback).
    let listen = format!("0.0.0.0:{}", srv.addr.port());
    let out = blocking(move || {
        Command::new(BIN)
            .args(["call", "android_tap", "x=3", "y=3"])
            .env("XAGENT_ADB_CONFIG_DIR", "/nonexistent-xagent-config")
            .env("XAGENT_ADB_LISTEN", listen)
            .env_remove("XAGENT_ADB_URL")
            .output()
            .unwrap()
    })
    .await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Issue 35 item 1: the README's scripted agent task (observe → tap by number → verify with a dump → type → clear)
/// run exactly as printed through `call --session`, against a connector and a simulated phone: one binding and its
/// observation across calls, one compact JSON line per call, and the phone given back at the end of input. The
/// same kind of lines as one-shot calls fail: the observation is freed with each call's binding (what `call --help`
/// says).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_session_runs_the_readmes_agent_task_as_printed() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let block = readme.split("<!-- call-session-example -->\n```bash\n").nth(1).expect("the README's example");
    let block = &block[..block.find("\n```").expect("the block's end")];
    let (adb, _sim, _serial) = setup().await.expect("adb");
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(&dir.path().join("data"), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
    let url = format!("http://{}", srv.addr);
    let script = block.replace("target/release/xagent-adb-connector", BIN);
    assert!(!script.contains("8790"), "the loop names no connector of its own: {script}");
    let run = |mut cmd: Command| {
        blocking(move || {
            let out = cmd
                .env("XAGENT_ADB_CONFIG_DIR", "/nonexistent-xagent-config")
                .env_remove("XAGENT_ADB_API_KEY_FILE")
                .output()
                .unwrap();
            let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
            (out.status.code(), text(&out.stdout), text(&out.stderr))
        })
    };
    // Issue 50: without the demo's export line the shell stops before `call` runs (no default connector, which
    // on an installed box is the service's, with its phones and key).
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(&script).env_remove("XAGENT_DEMO_URL");
    let (code, out, err) = run(sh).await;
    assert_ne!(code, Some(0), "{out}{err}");
    assert!(out.is_empty() && err.contains("paste the demo's export line"), "{out}{err}");
    // The keyboard open, as a tap on the text field leaves it: the loop starts from the home screen anyway.
    let (code, out, err) = run({
        let mut c = Command::new(BIN);
        c.args(["call", "android_tap", "element:={\"resource_id\":\"com.xagent.sim:id/input\"}", "--url", &url]);
        c
    })
    .await;
    assert_eq!(code, Some(0), "{out}{err}");
    // The tracker may still be verifying the phone: `call` retries the binding by itself.
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(&script).env("XAGENT_DEMO_URL", &url);
    let (code, out, err) = run(sh).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(err.contains(&format!("on the connector at {url}")), "{err}");
    let lines: Vec<Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 6, "one compact line per call: {out}{err}");
    let (observed, tap, dumped, typed, cleared) = (&lines[1], &lines[2], &lines[3], &lines[4], &lines[5]);
    let listed = |i: u64| observed["elements"].as_array().unwrap().iter().find(|e| e["index"] == i).cloned();
    assert_eq!(listed(3).unwrap()["resource_id"], "com.xagent.sim:id/increment", "{observed}");
    assert_eq!(listed(5).unwrap()["resource_id"], "com.xagent.sim:id/input", "{observed}");
    assert_eq!(tap["element"]["resource_id"], "com.xagent.sim:id/increment", "{tap}");
    let count = |v: &Value| -> Vec<String> {
        let els = v["elements"].as_array().unwrap().iter();
        els.filter_map(|e| e["text"].as_str().filter(|t| t.starts_with("Count: ")).map(str::to_owned)).collect()
    };
    assert_eq!(
        (count(observed), count(dumped)),
        (vec!["Count: 0".to_owned()], vec!["Count: 1".to_owned()]),
        "{dumped}"
    );
    assert_eq!((&typed["field_text"], &typed["verified"]), (&json!("hello"), &json!(true)), "{typed}");
    assert_eq!((&cleared["field_text"], &cleared["verified"]), (&json!(""), &json!(true)), "{cleared}");

    // Given back at the end of input: a one-shot call binds the one phone at once.
    let one_shot = |args: &[&str]| {
        let mut cmd = Command::new(BIN);
        cmd.arg("call").args(args).args(["--url", &url]);
        cmd
    };
    let (code, out, err) = run(one_shot(&["android_ui_dump"])).await;
    assert_eq!(code, Some(0), "the session did not give the phone back: {out}{err}");
    assert_eq!(out.trim_end().lines().count(), 1, "not a terminal: one compact line: {out}");
    let id = serde_json::from_str::<Value>(&out).unwrap()["observation_id"].as_str().unwrap().to_owned();
    // What a one-shot call cannot do: act on the observation of an earlier call.
    let element = format!("element:={{\"index\":3,\"observation_id\":\"{id}\"}}");
    let (code, _, err) = run(one_shot(&["android_tap", &element])).await;
    assert_eq!(code, Some(1));
    assert!(err.contains("observation_expired"), "{err}");
    let help = Command::new(BIN).args(["call", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&help.stdout).to_string();
    assert!(help.contains("What one call cannot do (use --session)") && help.contains("observation_id"), "{help}");
}

/// Issue 37 item 3: `call --list` names every tool with one line, and a mistyped tool gets the nearest ones (before
/// anything is connected: exit 2).
#[test]
fn call_lists_the_tools_and_suggests_for_a_typo() {
    let out = Command::new(BIN).args(["call", "--list"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let ids: Vec<&str> = text.lines().filter_map(|l| l.split_whitespace().next()).collect();
    for id in ["android_tap", "android_observe", "android_ui_dump", "android_shell"] {
        assert!(ids.contains(&id), "{id} missing from {text}");
    }
    assert_eq!(ids.len(), text.lines().count(), "one line per tool: {text}");
    assert!(text.lines().any(|l| l.starts_with("android_tap ") && l.contains("Tap the screen")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("android_shell ") && l.contains("opt-in")), "{text}");
    let out = Command::new(BIN).args(["call", "android_tpa", "x=1", "--url", "http://127.0.0.1:9"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains("unknown tool \"android_tpa\"; did you mean \"android_tap\""), "{err}");
    assert!(err.contains("call --list"), "{err}");
}

/// What must never reach an operator's terminal as itself: control characters other than the line breaks of the
/// output's own layout (C0, DEL, C1 — `ESC[1A ESC[2K` erases the line above, OSC retitles the terminal, a `\n`
/// forges a line) and the bidi overrides and isolates that reorder a line.
fn acting_chars(text: &str) -> Vec<String> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n')
                || ('\u{202a}'..='\u{202e}').contains(&c)
                || ('\u{2066}'..='\u{2069}').contains(&c)
        })
        .map(|c| format!("U+{:04X}", c as u32))
        .collect()
}

/// Issue 36 item 3: an agent chooses its `tool_call_id` (any string up to 128 bytes, control characters included)
/// and `audit tail` prints it. A line break, `ESC[1A ESC[2K`, an OSC title, an 8-bit CSI and a right-to-left
/// override in it arrive as visible escapes: one line per record, nothing forged or erased; `--json` keeps the
/// exact id and writes DEL, C1 and bidi controls as `\uNNNN`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_tail_shows_an_agents_hostile_call_id_escaped() {
    let (adb, _sim, _serial) = setup().await.expect("adb");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let srv = Server::start(&data, &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let ch = c.bind(None).await;
    let hostile =
        "c1\n    9  2026-01-01T00:00:00.000Z  forged\u{1b}[1A\u{1b}[2K\u{1b}]0;owned\u{7}\u{9b}2J\u{7f}\u{202e}x";
    let tap = json!({"tool_id": "android_tap", "arguments": {"connector_channel_id": ch, "x": 3, "y": 4},
                     "context": {"tool_call_id": hostile}});
    let ack = c.request("tool.invoke", Some(&ch), tap).await;
    assert!(ack["error"].is_null(), "{ack}");
    let tail = |json: bool| {
        let data = data.clone();
        blocking(move || {
            let mut cmd = Command::new(BIN);
            cmd.args(["audit", "tail"]).env("XAGENT_ADB_CONFIG_DIR", "/nonexistent-xagent-config");
            if json {
                cmd.arg("--json");
            }
            let out = cmd.arg("--data-dir").arg(&data).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8(out.stdout).expect("UTF-8")
        })
    };
    let text = tail(false).await;
    assert_eq!(acting_chars(&text), Vec::<String>::new(), "raw control characters on the terminal:\n{text}");
    let shown = r"c1\n    9  2026-01-01T00:00:00.000Z  forged\x1b[1A\x1b[2K\x1b]0;owned\x07\u{9b}2J\x7f\u{202e}x";
    let row = text.lines().find(|l| l.contains(shown)).unwrap_or_else(|| panic!("the id, escaped, in\n{text}"));
    assert!(row.contains("android_tap"), "the id's record is one line: {row}");
    // Every line after the header is a record of its own (starts with its sequence number): nothing forged.
    for l in text.lines().skip(1) {
        assert!(l.split_whitespace().next().is_some_and(|s| s.parse::<u64>().is_ok()), "forged line {l:?} in\n{text}");
    }
    let json_text = tail(true).await;
    assert_eq!(acting_chars(&json_text), Vec::<String>::new(), "raw control characters:\n{json_text}");
    let rec = json_text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["tool_id"] == "android_tap")
        .unwrap_or_else(|| panic!("{json_text}"));
    assert_eq!(rec["tool_call_id"], hostile, "--json keeps the id exactly");
}

/// Issue 36 item 4, the phone's end: a phone whose `input` prints terminal escapes and a forged line on stderr
/// (a vendor's tool or a rooted phone prints what it likes). The agent's error keeps the phone's words, printable;
/// `call`'s terminal gets no escape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_shows_a_phones_terminal_escapes_to_nobody() {
    let (adb, sim, serial) = setup().await.expect("adb");
    let dir = tempfile::tempdir().unwrap();
    // The shell path: the escapes come on the `input` command's stderr (a helper tap runs no `input` command).
    let server = format!("127.0.0.1:{}", adb.port);
    let srv = Server::start(&dir.path().join("data"), &["--adb-server", &server, "--phone-helper", "off"], &[]);
    sim.answer(
        "input tap",
        "",
        "\u{1b}]0;owned\u{7}\u{1b}[1A\u{1b}[2KError: injected\nerror: forged line\u{9b}31m\u{202e}red\n",
        1,
    );
    let url = format!("http://{}", srv.addr);
    let out = blocking(move || {
        Command::new(BIN)
            .args(["call", "android_tap", "x=10", "y=20", "--serial", &serial, "--url", &url])
            .env("XAGENT_ADB_CONFIG_DIR", "/nonexistent-xagent-config")
            .output()
            .unwrap()
    })
    .await;
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("device command failed (exit 1)") && err.contains("Error: injected"), "{err}");
    assert_eq!(acting_chars(&err), Vec::<String>::new(), "raw control characters on call's stderr:\n{err:?}");
    // The `bound …` line, then one error line, none forged.
    assert_eq!(err.lines().filter(|l| !l.starts_with("bound ")).count(), 1, "one error line, none forged: {err:?}");
    // The agent's copy of the message (WebSocket) is clean too: the phone's words enter it through phone_text.
    let mut c = ws(srv.addr, None).await;
    c.hello(None).await;
    let ch = c.bind(None).await;
    let r = c.tap(&ch, 10, 20).await;
    let msg = r["error"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(msg.contains("Error: injected error: forged line"), "{r}");
    assert_eq!(acting_chars(&msg), Vec::<String>::new(), "{msg:?}");
}

/// A connector that lies, for `call`: it speaks the data plane just far enough (hello, channel.open, auth.start,
/// tool.invoke, auth.logout, channel.close) and answers the tool call with `answer` (the whole packet but its
/// `request_id`); an HTTP GET gets `download`, raw.
async fn lying_connector(answer: serde_json::Value, download: &'static [u8]) -> std::net::SocketAddr {
    use futures_util::{SinkExt, StreamExt};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio_tungstenite::tungstenite::{handshake::server, Message};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                // The request head, peeked: a WebSocket upgrade or the download's GET.
                let mut head = vec![0u8; 4096];
                let deadline = Instant::now() + T;
                let n = loop {
                    let n = s.peek(&mut head).await.unwrap_or(0);
                    if head[..n].windows(4).any(|w| w == b"\r\n\r\n") || Instant::now() > deadline {
                        break n;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                };
                if !String::from_utf8_lossy(&head[..n]).to_ascii_lowercase().contains("upgrade: websocket") {
                    let _ = s.read(&mut head).await;
                    let _ = s.write_all(download).await;
                    return;
                }
                // The callback's signature is tungstenite's (its error is an HTTP response).
                #[allow(clippy::result_large_err)]
                let echo = |req: &server::Request, mut resp: server::Response| {
                    if let Some(p) = req.headers().get("Sec-WebSocket-Protocol") {
                        resp.headers_mut().insert("Sec-WebSocket-Protocol", p.clone());
                    }
                    Ok(resp)
                };
                let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(s, echo).await else { return };
                while let Some(Ok(Message::Text(t))) = ws.next().await {
                    let v: serde_json::Value = serde_json::from_str(t.as_str()).unwrap();
                    let rid = v["request_id"].clone();
                    let reply = match v["type"].as_str() {
                        Some("channel.open") => {
                            json!({"type": "channel.open.ack", "request_id": rid, "connector_channel_id": "cch_lie"})
                        }
                        Some("auth.start") => {
                            json!({"type": "auth.start.ack", "request_id": rid, "payload": {"status": "authenticated"}})
                        }
                        Some("tool.invoke") => {
                            let mut a = answer.clone();
                            a["request_id"] = rid;
                            a
                        }
                        _ => json!({"type": "ack", "request_id": rid, "payload": {}}),
                    };
                    if ws.send(Message::text(reply.to_string())).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    addr
}

/// `call TOOL --url` against `addr` with `extra` flags: (exit code, stdout, stderr).
async fn call_at(addr: std::net::SocketAddr, extra: Vec<String>) -> (Option<i32>, String, String) {
    blocking(move || {
        let out = Command::new(BIN)
            .args(["call", "android_screenshot", "--url", &format!("http://{addr}"), "--timeout", "20s"])
            .args(&extra)
            .env("XAGENT_ADB_CONFIG_DIR", "/nonexistent-xagent-config")
            .env_remove("XAGENT_ADB_API_KEY_FILE")
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    })
    .await
}

/// Issue 36 item 4, the connector's end: `call` prints what a connector says — error code and message, file name,
/// download URL, the result — and a lying connector puts terminal escapes in all of them. They reach the terminal
/// escaped (stderr) or as `\uNNNN` (the result's JSON on stdout, the same value); a URL that would add to the
/// download's request line is refused; a download cut short leaves no temporary file behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_shows_a_lying_connectors_terminal_escapes_to_nobody() {
    let evil = "\u{1b}]0;owned\u{7}\u{1b}[1A\u{1b}[2K\nerror: forged line\u{9b}2J\u{7f}\u{202e}";
    let error = json!({"type": "error", "payload": {"error": {"code": format!("tool_invoke_failed{evil}"),
                                                              "message": format!("refused{evil}")}}});
    let addr = lying_connector(error, b"").await;
    let (code, _, err) = call_at(addr, Vec::new()).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(r"android_screenshot: tool_invoke_failed\x1b]0;owned\x07\x1b[1A\x1b[2K\nerror: forged"),
        "{err}"
    );
    assert_eq!(acting_chars(&err), Vec::<String>::new(), "{err:?}");
    assert_eq!(err.lines().filter(|l| !l.starts_with("bound ")).count(), 1, "{err:?}");

    let result = json!({"note": evil, "files": [{"filename": format!("shot{evil}.png"),
                                                  "download_url": format!("/files/refs/t{evil}")}]});
    let addr = lying_connector(json!({"type": "tool.invoke.ack", "payload": {"result": result}}), b"").await;
    let (code, out, err) = call_at(addr, Vec::new()).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(acting_chars(&out), Vec::<String>::new(), "{out:?}");
    assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap(), result, "stdout is the same JSON value");
    assert!(err.contains(r"download shot\x1b]0;owned"), "{err}");
    assert_eq!(acting_chars(&err), Vec::<String>::new(), "{err:?}");
    assert_eq!(err.lines().filter(|l| !l.starts_with("bound ")).count(), 1, "{err:?}");
    // With --out the URL goes into a request line: refused, nothing written.
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("shot.png");
    let (code, _, err) = call_at(addr, vec!["--out".into(), target.to_str().unwrap().into()]).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("is not a URL path"), "{err}");
    assert_eq!(acting_chars(&err), Vec::<String>::new(), "{err:?}");

    // A download cut short: an error, and neither the target nor a temporary file is left.
    let files = json!({"files": [{"filename": "shot.png", "download_url": "/files/refs/tok"}]});
    let short = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n0123456789";
    let addr = lying_connector(json!({"type": "tool.invoke.ack", "payload": {"result": files}}), short).await;
    let (code, _, err) = call_at(addr, vec!["--out".into(), target.to_str().unwrap().into()]).await;
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("after 10 of 1000 bytes"), "{err}");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Issue 36 item 5: `call --out` writes its download beside the target under a random name, created new, and
/// renames it over the target. Someone who can write the directory plants a symlink at the name the old code used
/// (`<out>.part-<pid>`, the pid visible to everyone) pointing at a file of the victim's: it is not followed, the
/// victim's file is untouched, the target is the screenshot (a regular file, 0600), nothing else is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_out_does_not_follow_a_planted_symlink() {
    use std::os::unix::fs::PermissionsExt;
    let (adb, _sim, serial) = setup().await.expect("adb");
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(&dir.path().join("data"), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"the victim's file").unwrap();
    let target = shared.join("screen.jpg");
    let url = format!("http://{}", srv.addr);
    let (t, v, s) = (target.clone(), victim.clone(), shared.clone());
    let (status, err, planted) = blocking(move || {
        let child = Command::new(BIN)
            .args(["call", "android_screenshot", "--serial", &serial, "--url", &url, "--out"])
            .arg(&t)
            .env("XAGENT_ADB_CONFIG_DIR", "/nonexistent-xagent-config")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Planted the moment the pid is known: long before the call has bound a phone and taken the screenshot.
        let planted = s.join(format!("screen.part-{}", child.id()));
        std::os::unix::fs::symlink(&v, &planted).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status, String::from_utf8_lossy(&out.stderr).to_string(), planted)
    })
    .await;
    assert!(status.success(), "{err}");
    let now = std::fs::read(&victim).unwrap();
    assert!(
        now == b"the victim's file",
        "the planted symlink was followed: the victim's file now holds {} bytes",
        now.len()
    );
    let meta = std::fs::symlink_metadata(&target).unwrap();
    assert!(meta.file_type().is_file(), "{meta:?}");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert!(std::fs::read(&target).unwrap().starts_with(&[0xFF, 0xD8]), "a JPEG");
    let mut left: Vec<_> = std::fs::read_dir(&shared).unwrap().map(|e| e.unwrap().path()).collect();
    left.sort();
    let mut want = vec![planted, target];
    want.sort();
    assert_eq!(left, want, "only the target and the planted link");
}
