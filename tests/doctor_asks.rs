//! Issue 50: a bare `doctor` next to a running connector asks that connector (its `/health` and `/api/v1/devices`
//! on the listen address) for the adb servers it uses and leaves the state to it, instead of checking the default
//! `127.0.0.1:5037` and `./data`; it says which connector it asked. With `--adb-server` / `--data-dir` given, those
//! are checked as before.

mod common;

use std::process::Command;

use common::adb::blocking;
use common::*;

const BIN: &str = env!("CARGO_BIN_EXE_xagent-adb-connector");

/// `doctor ARGS` run in `cwd` with no installed service and no XAGENT_ADB_* settings: its stdout.
async fn doctor(cwd: std::path::PathBuf, args: Vec<String>) -> String {
    blocking(move || {
        let out = Command::new(BIN)
            .arg("doctor")
            .args(&args)
            .current_dir(&cwd)
            .env("XAGENT_ADB_CONFIG_DIR", cwd.join("no-installed-service"))
            .env_remove("XAGENT_ADB_DATA_DIR")
            .env_remove("XAGENT_ADB_SERVER")
            .env_remove("XAGENT_ADB_LISTEN")
            .env_remove("XAGENT_CONNECTOR_API_KEY")
            .env_remove("XAGENT_ADB_API_KEY_FILE")
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_doctor_asks_the_running_connector_and_says_which() {
    let tmp = tempfile::tempdir().unwrap();
    // The connector keeps its state away from ./data and uses an adb server that is not the default one.
    let srv = Server::start(&tmp.path().join("elsewhere"), &["--adb-server", "127.0.0.1:1"], &[]);
    let listen = srv.addr.to_string();
    let text = doctor(tmp.path().to_owned(), vec!["--listen".into(), listen.clone()]).await;
    assert!(
        text.contains(&format!("asked the connector running on {listen} (GET /health:")),
        "says which connector it asked:\n{text}"
    );
    assert!(text.contains("checking its adb server(s) 127.0.0.1:1"), "{text}");
    assert!(text.contains("127.0.0.1:1: adb server unreachable"), "it checked the connector's adb server:\n{text}");
    assert!(!text.contains("127.0.0.1:5037"), "not the default adb server:\n{text}");
    assert!(!text.contains("./data"), "not the default data dir:\n{text}");
    assert!(text.contains(&format!("state: the connector on {listen} keeps its own")), "{text}");

    // Named explicitly, the flags win: the given adb server and data dir are checked, as before.
    let args = vec![
        "--listen".into(),
        listen.clone(),
        "--adb-server".into(),
        "127.0.0.1:2".into(),
        "--data-dir".into(),
        "./data".into(),
    ];
    let text = doctor(tmp.path().to_owned(), args).await;
    assert!(text.contains("127.0.0.1:2: adb server unreachable") && !text.contains("127.0.0.1:1:"), "{text}");
    assert!(text.contains("data dir ./data does not exist yet"), "{text}");
    assert!(!text.contains("asked the connector running on"), "{text}");

    // Nothing running on the listen address: the defaults, and no connector named.
    drop(srv);
    let text = doctor(tmp.path().to_owned(), vec!["--listen".into(), listen.clone()]).await;
    assert!(!text.contains("asked the connector"), "{text}");
    assert!(text.contains("data dir ./data does not exist yet"), "{text}");
}
