//! Issue 49 item 8: `call --session` reads a line the way the shell reads the one-shot command line (quotes:
//! `key="a b"`, `element:='{"text":"Increment"}'`), and `@obs` is the newest observation — an action's
//! `effect.tree` one included. Driven line by line against a connector and a simulated phone behind the real adb
//! server.

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::adb::*;
use common::*;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const BIN: &str = env!("CARGO_BIN_EXE_xagent-adb-connector");

/// One session: lines in, one JSON line out per call.
struct Session {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
}

impl Session {
    fn start(url: &str) -> Session {
        let mut child = tokio::process::Command::new(BIN)
            .args(["call", "--session", "--url", url])
            .env("XAGENT_ADB_CONFIG_DIR", "/nonexistent-xagent-config")
            .env_remove("XAGENT_ADB_API_KEY_FILE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Session { child, stdin, stdout }
    }

    async fn line(&mut self, line: &str) -> Value {
        self.stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        self.stdin.flush().await.unwrap();
        let out = tokio::time::timeout(Duration::from_secs(120), self.stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("no answer to {line}"))
            .unwrap()
            .unwrap_or_else(|| panic!("the session ended at {line}"));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
    }

    async fn end(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait()).await.unwrap().unwrap();
        assert!(status.success(), "{status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_line_is_quoted_like_the_command_line_and_obs_follows_the_effect() {
    let (adb, sim, _serial) = setup().await.expect("adb");
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(&dir.path().join("data"), &["--adb-server", &format!("127.0.0.1:{}", adb.port)], &[]);
    let url = format!("http://{}", srv.addr);

    // The one-shot command line, as a user types it into a shell…
    let typed = r#"android_input_text element:='{"resource_id":"com.xagent.sim:id/input"}' text="a b 'c'" clear=true verify=true"#;
    let one_shot = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{BIN} call --url {url} {typed}"))
        .env("XAGENT_ADB_CONFIG_DIR", "/nonexistent-xagent-config")
        .env_remove("XAGENT_ADB_API_KEY_FILE")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&one_shot.stdout);
    assert!(one_shot.status.success(), "{out}{}", String::from_utf8_lossy(&one_shot.stderr));
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!((&v["field_text"], &v["verified"]), (&"a b 'c'".into(), &true.into()), "{v}");

    // … means the same as a session line.
    let mut s = Session::start(&url);
    let v = s.line(&typed.replace("a b 'c'", "d e 'f'")).await;
    assert_eq!((&v["field_text"], &v["verified"]), (&"d e 'f'".into(), &true.into()), "{v}");
    let v = s.line(r#"android_input_text text="" clear:=true verify=true"#).await;
    assert_eq!(v["field_text"], "", "{v}");

    // @obs after an action is its effect's observation: the counter text as the tap left it.
    let observed = s.line("android_observe marks=false").await;
    assert!(observed["observation_id"].is_string(), "{observed}");
    let tap = s.line(r#"android_tap element:='{"text":"Increment"}' effect_tree=true"#).await;
    assert_eq!(sim.counter(), 1, "{tap}");
    let tree = &tap["effect"]["tree"];
    let effect_id = tree["observation_id"].as_str().unwrap_or_else(|| panic!("effect_tree asked for: {tap}"));
    assert_ne!(Some(effect_id), observed["observation_id"].as_str());
    let count = tree["changed"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|e| e["text"] == "Count: 1")
        .unwrap_or_else(|| panic!("the tap changed the counter: {tap}"));
    let line =
        format!(r#"android_tap element:='{{"index": {}, "observation_id": "@obs"}}' settle=false"#, count["index"]);
    let again = s.line(&line).await;
    assert!(again.get("error").is_none(), "{again}");
    assert_eq!(again["element"]["text"], "Count: 1", "{again}");
    assert_eq!(again["re_resolved"], false, "@obs was the effect's observation, its element where it is: {again}");

    // A quote left open is a clear error of that line; the session goes on.
    let bad = s.line(r#"android_input_text text="open"#).await;
    assert!(bad["error"]["message"].as_str().unwrap().contains("quote is not closed"), "{bad}");
    let status = s.line("android_device_status").await;
    assert!(status["screen_width"].is_u64(), "{status}");
    s.end().await;
}
