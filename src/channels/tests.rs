//! Hub unit tests with a scripted backend: lease, ownership, binding rules.

use serde_json::json;

use super::*;
use crate::channels::AuthOutcome;
use crate::device::fake::FakeBackend;

fn hub_with(store: Store, backend: Arc<FakeBackend>, grace: Duration, allow: &[&str]) -> Arc<Hub> {
    let cfg = HubConfig {
        lease_grace: grace,
        allow_serials: allow.iter().map(|s| s.to_string()).collect(),
        labels: Default::default(),
        api_key_required: false,
        audit: Default::default(),
    };
    Hub::new(store, Arc::new(Registry::empty()), backend, cfg).unwrap()
}

fn hello_payload(id: Option<&str>) -> Map<String, Value> {
    let mut p = obj([
        ("connector_card_id", json!("device.adb")),
        ("protocol_version", json!("3.0")),
        ("supported_profiles", json!(["xagent.im.v2", "xagent.device.v1"])),
    ]);
    if let Some(id) = id {
        p.insert("connector_id".into(), json!(id));
    }
    p
}

fn socket(hub: &Hub) -> SocketId {
    hub.register_socket(mpsc::channel(8).0)
}

#[test]
fn hello_validation_order_and_codes() {
    let hub = hub_with(Store::open_in_memory().unwrap(), FakeBackend::new(&[]), Duration::from_secs(60), &[]);
    let s = socket(&hub);
    let mut p = hello_payload(None);
    p.insert("connector_card_id".into(), json!("im.wechat"));
    assert_eq!(hub.hello(s, &p).err().unwrap().code, ErrorCode::ConnectorCardIdMismatch);
    for v in [json!("2.9"), json!(""), json!(null), json!("abc")] {
        let mut p = hello_payload(None);
        p.insert("protocol_version".into(), v.clone());
        assert_eq!(hub.hello(s, &p).err().unwrap().code, ErrorCode::ProtocolVersionUnsupported, "{v}");
    }
    let mut p = hello_payload(None);
    p.remove("supported_profiles");
    assert_eq!(hub.hello(s, &p).err().unwrap().code, ErrorCode::InvalidPacket);
    let mut p = hello_payload(None);
    p.insert("supported_profiles".into(), json!(["xagent.im.v2"]));
    assert_eq!(hub.hello(s, &p).err().unwrap().code, ErrorCode::ProfileNotSupported);
    let mut p = hello_payload(None);
    p.insert("protocol_version".into(), json!("3.1"));
    let ok = hub.hello(s, &p).unwrap();
    // A second hello on the same socket with another id is an identity error.
    assert_eq!(hub.hello(s, &hello_payload(Some("conn_other"))).err().unwrap().code, ErrorCode::ConnectorIdMismatch);
    assert_eq!(hub.hello(s, &hello_payload(Some(&ok.connector_id))).unwrap().connector_id, ok.connector_id);
}

#[test]
fn descriptor_profiles_are_the_intersection() {
    let hub = hub_with(Store::open_in_memory().unwrap(), FakeBackend::new(&[]), Duration::from_secs(60), &[]);
    let s = socket(&hub);
    hub.hello(s, &hello_payload(None)).unwrap();
    let (_, d) = hub.open_channel(s, None).unwrap();
    assert_eq!(d.connection.profiles, vec!["xagent.device.v1".to_string()]);
    assert_eq!(d.connection.status, ConnStatus::Created);
    assert!(crate::protocol::descriptor::validate(&d, hub.card(), &d.connection.connector_channel_id).is_empty());
}

#[test]
fn channel_checks_map_to_the_protocol_codes() {
    let hub = hub_with(Store::open_in_memory().unwrap(), FakeBackend::new(&[]), Duration::from_secs(60), &[]);
    let (a, b) = (socket(&hub), socket(&hub));
    hub.hello(a, &hello_payload(None)).unwrap();
    hub.hello(b, &hello_payload(None)).unwrap(); // a second, different instance
    let (ca, _) = hub.open_channel(a, None).unwrap();
    let code = |s, c: Option<&str>| hub.check_channel(s, c).err().map(|e| e.code);
    assert_eq!(code(a, None), Some(ErrorCode::ConnectorChannelIdRequired));
    assert_eq!(code(a, Some("")), Some(ErrorCode::ConnectorChannelIdRequired));
    assert_eq!(code(a, Some("cch_wechat_1")), Some(ErrorCode::ConnectorChannelConnectorMismatch));
    assert_eq!(code(a, Some("cch_adb_000000000000000000000000")), Some(ErrorCode::ConnectionNotFound));
    assert_eq!(code(b, Some(&ca)), Some(ErrorCode::ConnectorChannelNotOwned));
    assert_eq!(code(a, Some(&ca)), None);
    hub.close_channel(&ca);
    assert_eq!(code(a, Some(&ca)), Some(ErrorCode::ChannelNotOpen));
    // Another instance may not take the channel over: it gets a fresh one.
    let (cb, _) = hub.open_channel(b, Some(&ca)).unwrap();
    assert_ne!(cb, ca);
}

#[test]
fn binding_pool_serial_allowlist_and_exclusivity() {
    let backend = FakeBackend::new(&[
        ("AAA111", DeviceState::Online),
        ("BBB222", DeviceState::Unauthorized),
        ("CCC333", DeviceState::Online),
    ]);
    let hub = hub_with(
        Store::open_in_memory().unwrap(),
        backend.clone(),
        Duration::from_secs(60),
        &["AAA111", "BBB222", "ZZZ999"],
    );
    let s = socket(&hub);
    hub.hello(s, &hello_payload(None)).unwrap();
    let (c1, _) = hub.open_channel(s, None).unwrap();
    let (c2, _) = hub.open_channel(s, None).unwrap();
    let start = |c: &str, input: Value| hub.auth_start(c, &obj([("flow_id", json!("adb_device")), ("input", input)]));

    let code = |o: AuthOutcome| o.error.map(|e| e.code);
    assert_eq!(code(start(&c1, json!({"serial": "CCC333"}))), Some(ErrorCode::PermissionDenied));
    // An unauthorised device gives a pending session that binds once the person accepts the prompt.
    let pending = start(&c1, json!({"serial": "BBB222"}));
    assert!(pending.error.is_none());
    assert_eq!(pending.payload["status"], "pending");
    assert_eq!(pending.payload["poll_interval_millis"], 2000);
    assert!(pending.payload["message"].as_str().unwrap().contains("Allow USB debugging"));
    assert_eq!(hub.descriptor(&c1).unwrap().connection.status, ConnStatus::Authenticating);
    let sid = obj([("auth_session_id", pending.payload["auth_session_id"].clone())]);
    assert_eq!(hub.auth_status(&c1, &sid).unwrap()["status"], "pending");
    let cancel = hub.auth_cancel(&c1, &sid);
    assert_eq!(
        (cancel["status"].as_str(), cancel["auth_status"].as_str()),
        (Some("canceled"), Some("unauthenticated"))
    );
    assert_eq!(hub.auth_status(&c1, &sid).unwrap()["status"], "canceled");
    assert_eq!(hub.descriptor(&c1).unwrap().connection.status, ConnStatus::Created);
    let pending = start(&c1, json!({"serial": "BBB222"}));
    let sid = obj([("auth_session_id", pending.payload["auth_session_id"].clone())]);
    backend.devices.lock().unwrap()[1].state = DeviceState::Online; // the person tapped "Allow"
    let st = hub.auth_status(&c1, &sid).unwrap();
    assert_eq!(st["status"], "authenticated");
    assert_eq!(st["connection_descriptor"]["connection"]["status"], "connected");
    assert_eq!(hub.binding(&c1).unwrap().serial, "BBB222");
    hub.auth_logout(&c1).unwrap();
    backend.devices.lock().unwrap()[1].state = DeviceState::Unauthorized;
    assert_eq!(code(start(&c1, json!({"serial": "ZZZ999"}))), Some(ErrorCode::DeviceNotFound));
    // Not on the allowlist: refused before looking, so existence is not revealed.
    assert_eq!(code(start(&c1, json!({"serial": "YYY000"}))), Some(ErrorCode::PermissionDenied));
    assert_eq!(code(start(&c1, json!({"serial": "a; rm -rf /"}))), Some(ErrorCode::AuthInputInvalid));
    assert_eq!(code(start(&c1, json!({"host": "x"}))), Some(ErrorCode::AuthInputInvalid));
    assert_eq!(code(hub.auth_start(&c1, &obj([("flow_id", json!("nope"))]))), Some(ErrorCode::AuthFlowNotFound));

    // Pool: no serial binds the only free, online, allowed device.
    let ok = start(&c1, json!({}));
    assert!(ok.error.is_none());
    assert_eq!(ok.payload["status"], "authenticated");
    assert_eq!(ok.payload["connection_descriptor"]["connection"]["status"], "connected");
    assert_eq!(hub.binding(&c1).unwrap().serial, "AAA111");
    // Exclusive: the second channel finds no free online device (only the unauthorised one, which it waits
    // for), and cannot take AAA111 by name.
    let p2 = start(&c2, json!({}));
    assert_eq!(p2.payload["status"], "pending");
    hub.auth_cancel(&c2, &obj([("auth_session_id", p2.payload["auth_session_id"].clone())]));
    assert_eq!(code(start(&c2, json!({"serial": "AAA111"}))), Some(ErrorCode::DeviceBusy));
    // Re-running auth.start on a bound channel reuses the binding.
    let again = start(&c1, json!({"serial": "AAA111"}));
    assert_eq!(again.payload["status"], "authenticated");

    let sid = ok.payload["auth_session_id"].as_str().unwrap().to_owned();
    let st = hub.auth_status(&c1, &obj([("auth_session_id", json!(sid))])).unwrap();
    assert_eq!(st["status"], "authenticated");
    assert_eq!(
        hub.auth_status(&c2, &obj([("auth_session_id", json!(sid))])).err().unwrap().code,
        ErrorCode::AuthSessionNotFound
    );
    assert_eq!(hub.auth_cancel(&c1, &obj([("auth_session_id", json!(sid))]))["status"], "ignored");
    assert_eq!(hub.auth_cancel(&c1, &obj([("auth_session_id", json!("auth_x"))]))["status"], "not_found");

    let out = hub.auth_logout(&c1).unwrap();
    assert_eq!(out["connection_descriptor"]["connection"]["status"], "created");
    // Two logouts so far (BBB222 earlier in this test, AAA111 now), each releasing its device.
    assert_eq!(backend.released.lock().unwrap().len(), 2);
    let again = start(&c2, json!({}));
    assert_eq!(again.payload["status"], "authenticated", "the released device is free again");
    assert_eq!(hub.binding(&c2).unwrap().serial, "AAA111");
}

#[test]
fn descriptor_follows_device_state() {
    let backend = FakeBackend::new(&[("AAA111", DeviceState::Online)]);
    let hub = hub_with(Store::open_in_memory().unwrap(), backend.clone(), Duration::from_secs(60), &[]);
    let s = socket(&hub);
    hub.hello(s, &hello_payload(None)).unwrap();
    let (c, _) = hub.open_channel(s, None).unwrap();
    assert!(hub.auth_start(&c, &obj([("flow_id", json!("adb_device"))])).error.is_none());
    let d = hub.descriptor(&c).unwrap();
    assert_eq!(d.connection.status, ConnStatus::Connected);
    assert!(d.target.account_hint.as_deref().is_some_and(|h| !h.contains("AAA111")), "serials are masked");
    assert_eq!(d.target.display_name, "Pixel (***)", "model + masked serial");
    backend.devices.lock().unwrap()[0].state = DeviceState::Offline;
    assert_eq!(hub.descriptor(&c).unwrap().connection.status, ConnStatus::Offline);
    backend.devices.lock().unwrap().clear();
    assert_eq!(hub.descriptor(&c).unwrap().connection.status, ConnStatus::Offline);
}

#[test]
fn lease_starts_on_last_socket_close_and_hello_cancels_it() {
    let hub = hub_with(Store::open_in_memory().unwrap(), FakeBackend::new(&[]), Duration::from_secs(60), &[]);
    let (a, b) = (socket(&hub), socket(&hub));
    let id = hub.hello(a, &hello_payload(None)).unwrap().connector_id;
    hub.hello(b, &hello_payload(Some(&id))).unwrap();
    hub.open_channel(a, None).unwrap();
    hub.socket_closed(a);
    assert!(expire(&hub, u64::MAX).is_empty(), "b is still connected: no lease");
    hub.socket_closed(b);
    assert!(expire(&hub, now_ms()).is_empty(), "inside the grace");
    let c = socket(&hub);
    assert_eq!(hub.hello(c, &hello_payload(Some(&id))).unwrap().connector_id, id, "resumed with the same id");
    assert!(expire(&hub, u64::MAX).is_empty(), "the hello cancelled the lease");
}

#[test]
fn lease_expiry_cleans_every_channel_through_its_own_path() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FakeBackend::new(&[("AAA111", DeviceState::Online), ("BBB222", DeviceState::Online)]);
    let hub = hub_with(Store::open(dir.path()).unwrap(), backend.clone(), Duration::from_millis(1), &[]);
    let s = socket(&hub);
    let id = hub.hello(s, &hello_payload(None)).unwrap().connector_id;
    for _ in 0..2 {
        let (c, _) = hub.open_channel(s, None).unwrap();
        assert!(hub.auth_start(&c, &obj([("flow_id", json!("adb_device"))])).error.is_none());
    }
    hub.socket_closed(s);
    assert_eq!(expire(&hub, now_ms() + 10), vec![id.clone()]);
    assert_eq!(backend.released.lock().unwrap().len(), 2, "each binding released");
    let store = Store::open(dir.path()).unwrap();
    for t in ["instances", "channels", "bindings", "auth_sessions"] {
        assert_eq!(store.count(t).unwrap(), 0, "{t}");
    }
    // The old id is unknown now: a hello with it gets a new one (§8.1 re-issue).
    let s2 = socket(&hub);
    assert_ne!(hub.hello(s2, &hello_payload(Some(&id))).unwrap().connector_id, id);
}

#[test]
fn restart_restores_channels_and_bindings_and_starts_a_lease() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FakeBackend::new(&[("AAA111", DeviceState::Online)]);
    let (id, ch) = {
        let hub = hub_with(Store::open(dir.path()).unwrap(), backend.clone(), Duration::from_secs(60), &[]);
        let s = socket(&hub);
        let id = hub.hello(s, &hello_payload(None)).unwrap().connector_id;
        let (c, _) = hub.open_channel(s, None).unwrap();
        assert!(hub.auth_start(&c, &obj([("flow_id", json!("adb_device"))])).error.is_none());
        (id, c)
    };
    let hub = hub_with(Store::open(dir.path()).unwrap(), backend.clone(), Duration::from_secs(60), &[]);
    assert!(expire(&hub, now_ms()).is_empty(), "restored instance is inside its grace");
    let s = socket(&hub);
    assert_eq!(hub.hello(s, &hello_payload(Some(&id))).unwrap().connector_id, id);
    let (c, d) = hub.open_channel(s, Some(&ch)).unwrap();
    assert_eq!(c, ch);
    assert_eq!(d.connection.status, ConnStatus::Connected);
    // And a restored instance that never says hello is cleaned after the grace.
    let hub2 = hub_with(Store::open(dir.path()).unwrap(), backend, Duration::from_secs(60), &[]);
    drop(hub);
    assert_eq!(expire(&hub2, now_ms() + 61_000), vec![id]);
}

#[test]
fn a_narrower_allowlist_after_restart_takes_the_device_away() {
    let dir = tempfile::tempdir().unwrap();
    let backend = FakeBackend::new(&[("AAA111", DeviceState::Online)]);
    let (id, ch) = {
        let hub = hub_with(Store::open(dir.path()).unwrap(), backend.clone(), Duration::from_secs(60), &[]);
        let s = socket(&hub);
        let id = hub.hello(s, &hello_payload(None)).unwrap().connector_id;
        let (c, _) = hub.open_channel(s, None).unwrap();
        assert!(hub.auth_start(&c, &obj([("flow_id", json!("adb_device"))])).error.is_none());
        (id, c)
    };
    let hub = hub_with(Store::open(dir.path()).unwrap(), backend, Duration::from_secs(60), &["OTHER1"]);
    let s = socket(&hub);
    hub.hello(s, &hello_payload(Some(&id))).unwrap();
    let (c, d) = hub.open_channel(s, Some(&ch)).unwrap();
    assert_eq!(c, ch);
    let key = hub.binding(&c).unwrap();
    assert!(!hub.device_allowed(&key));
    assert_eq!(d.connection.status, ConnStatus::Offline);
    assert!(d.tools.iter().all(|t| t.reason.as_deref().is_some_and(|r| r.starts_with("permission_denied"))));
    let again = hub.auth_start(&c, &obj([("flow_id", json!("adb_device"))]));
    assert_eq!(again.error.map(|e| e.code), Some(ErrorCode::PermissionDenied));
}

/// [`Hub::expire_leases`] from a plain test.
fn expire(hub: &Hub, now: u64) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    rt.block_on(hub.expire_leases(now))
}
