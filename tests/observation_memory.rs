//! Issue 22 item 6: `android_observe` observations are freed on `auth.logout`, on `channel.close` and by lifetime,
//! watched through the `/metrics` gauge `xagent_observations_held` of the real binary (real adb server, simulated
//! phone). On the old code they stayed until 4,096 channels had observed: the gauge did not exist and memory
//! of bind–observe–logout loops never came back.

mod common;

use std::time::{Duration, Instant};

use common::adb::*;
use common::*;
use serde_json::json;

async fn held(srv: &Server) -> u64 {
    let m = get(srv.addr, "/metrics").await.text();
    let line = m.lines().find(|l| l.starts_with("xagent_observations_held ")).unwrap_or_else(|| panic!("{m}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

async fn observe(c: &mut Client, ch: &str) {
    let a = c.invoke(ch, "android_observe", json!({"max_side": 200})).await;
    assert!(a["error"].is_null(), "{a}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observations_are_freed_on_logout_close_and_expiry() {
    tokio::time::timeout(Duration::from_secs(180), async {
        let (adb, _sim, _serial) = setup().await.expect("adb");
        let dir = tempfile::tempdir().unwrap();
        let srv = Server::start(
            &dir.path().join("data"),
            &["--adb-server", &format!("127.0.0.1:{}", adb.port)],
            &[("XAGENT_ADB_TEST_OBSERVATION_TTL_MS", "4000")],
        );
        let mut c = ws(srv.addr, None).await;
        c.hello(None).await;
        assert_eq!(held(&srv).await, 0);

        // Bind – observe – logout, several times: back to 0 after each logout.
        let ch = c.bind(None).await;
        for _ in 0..3 {
            observe(&mut c, &ch).await;
            observe(&mut c, &ch).await;
            assert_eq!(held(&srv).await, 2);
            let a = c.request("auth.logout", Some(&ch), json!({})).await;
            assert_eq!(a["payload"]["status"], "ok", "{a}");
            assert_eq!(held(&srv).await, 0, "auth.logout frees the channel's observations");
            let a = c.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": {}})).await;
            assert_eq!(a["payload"]["status"], "authenticated", "{a}");
        }

        // Nobody logs out: the sweep frees them after their lifetime (4 s here; then as long again recognised as
        // expired, to answer a late action with its element where it is now — issue 35), with no further call.
        observe(&mut c, &ch).await;
        assert_eq!(held(&srv).await, 1);
        let deadline = Instant::now() + Duration::from_secs(30);
        while held(&srv).await != 0 {
            assert!(Instant::now() < deadline, "the expired observation was never swept");
            tokio::time::sleep(Duration::from_millis(250)).await;
        }

        // channel.close frees them too.
        observe(&mut c, &ch).await;
        assert_eq!(held(&srv).await, 1);
        let a = c.request("channel.close", Some(&ch), json!({})).await;
        assert_eq!(a["payload"]["status"], "ok", "{a}");
        assert_eq!(held(&srv).await, 0, "channel.close frees the channel's observations");
    })
    .await
    .expect("test timed out");
}
