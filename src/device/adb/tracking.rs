//! The device list of each adb server (part of [`AdbBackend`], moved out of `adb.rs` to keep it under 1,000 lines):
//! one tracker per server (`track-devices` plus a 1 s poll), the servers' reachability, and applying each list —
//! new, changed and gone devices, and the verification that makes a device count as online.

use std::net::{SocketAddr, SocketAddrV4};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::super::host;
use super::super::key::{DeviceInfo, DeviceKey, DeviceState};
use super::{state_of, AdbBackend, Identity, PROBE, PROBE_OUTPUT_MAX};
use crate::protocol::errors::{ErrorCode, ProtoError};

impl AdbBackend {
    /// Starts one tracker per adb server; they run until `shutdown`.
    pub fn spawn_trackers(self: &Arc<Self>, shutdown: watch::Receiver<bool>) {
        for &server in &self.servers {
            tokio::spawn(self.clone().track(server, shutdown.clone()));
        }
        tokio::spawn(self.clone().watch_health(shutdown));
    }

    /// Follows `host:track-devices-l` of one server; reconnects with backoff when the server goes away, in which
    /// case all of its devices are reported gone until it is back.
    async fn track(self: Arc<Self>, server: SocketAddrV4, mut shutdown: watch::Receiver<bool>) {
        let mut backoff = Duration::from_millis(200);
        loop {
            match host::Tracker::open(SocketAddr::V4(server)).await {
                Ok(mut t) => {
                    backoff = Duration::from_millis(200);
                    self.set_reachable(server, true);
                    self.down_since.lock().unwrap_or_else(|e| e.into_inner()).remove(&server);
                    // track-devices misses some transitions (adb 29 does not announce offline → unauthorized),
                    // so a once-a-second `devices-l` poll reconciles the list as well.
                    let mut poll = tokio::time::interval(Duration::from_secs(1));
                    poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    loop {
                        tokio::select! {
                            _ = shutdown.changed() => return,
                            r = t.next() => match r {
                                Ok(list) => self.apply(server, list),
                                Err(e) => {
                                    tracing::warn!(%server, error = %e, "adb server device tracking interrupted");
                                    self.mark_down(server);
                                    break;
                                }
                            },
                            _ = poll.tick() => match host::devices(SocketAddr::V4(server)).await {
                                Ok(list) => self.apply(server, list),
                                Err(e) => {
                                    tracing::warn!(%server, error = %e, "adb server stopped answering");
                                    self.mark_down(server);
                                    break;
                                }
                            },
                        }
                    }
                }
                Err(e) => {
                    self.mark_down(server);
                    if self.set_reachable(server, false) {
                        tracing::warn!(%server, error = %e, "retrying every second");
                    }
                }
            }
            self.apply(server, Vec::new());
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(1));
        }
    }

    /// Records reachability; returns true when it changed to unreachable (log once per outage).
    fn set_reachable(&self, server: SocketAddrV4, up: bool) -> bool {
        let prev = self.reachable.lock().unwrap_or_else(|e| e.into_inner()).insert(server, up);
        if up && prev == Some(false) {
            tracing::info!(%server, "adb server reachable again");
        }
        !up && prev != Some(false)
    }

    /// Starts the outage clock of `server` unless it already runs (a failed retry does not reset it).
    pub(super) fn mark_down(&self, server: SocketAddrV4) {
        self.down_since.lock().unwrap_or_else(|e| e.into_inner()).entry(server).or_insert_with(Instant::now);
    }

    /// Every configured adb server, in `--adb-server` order, with how long its tracker has been without a
    /// connection (`None`: connected, or not tried yet).
    pub fn outages(&self) -> Vec<(SocketAddrV4, Option<Duration>)> {
        let down = self.down_since.lock().unwrap_or_else(|e| e.into_inner());
        self.servers.iter().map(|s| (*s, down.get(s).map(|at| at.elapsed()))).collect()
    }

    pub fn is_reachable(&self, server: SocketAddrV4) -> bool {
        self.reachable.lock().unwrap_or_else(|e| e.into_inner()).get(&server).copied().unwrap_or(false)
    }

    /// Replaces the device list of `server` and announces every device whose state or presence changed.
    pub(super) fn apply(self: &Arc<Self>, server: SocketAddrV4, list: Vec<host::ListedDevice>) {
        self.listed.lock().unwrap_or_else(|e| e.into_inner()).insert(server);
        let server_s = server.to_string();
        let mut changed = Vec::new();
        let mut to_verify = Vec::new();
        // Paths that left the online state (disconnects) and the offline flag of every listed path.
        let mut dropped = Vec::new();
        let mut offline = Vec::new();
        {
            let mut map = self.devices.lock().unwrap_or_else(|e| e.into_inner());
            let mut verified = self.verified.lock().unwrap_or_else(|e| e.into_inner());
            let mut seen = Vec::new();
            for d in list {
                let key = DeviceKey { server: server_s.clone(), serial: d.serial };
                let mut state = state_of(&d.state);
                if state != DeviceState::Online {
                    verified.remove(&key); // verify again when it comes back
                } else if !verified.contains_key(&key) {
                    // Listed as `device` but not yet proven to answer: not usable until verified.
                    state = DeviceState::Offline;
                    to_verify.push(key.clone());
                }
                let id = verified.get(&key).cloned().unwrap_or_else(|| Identity {
                    // The adb server's `model:` comes from the phone's banner: as untrusted as getprop.
                    model: d
                        .model
                        .map(|m| super::super::text::phone_text(&m, super::super::text::MAX_NAME_CHARS))
                        .filter(|m| !m.is_empty())
                        .unwrap_or_else(|| "Android device".into()),
                    ..Identity::default()
                });
                let info =
                    DeviceInfo { key: key.clone(), state, model: id.model, manufacturer: id.manufacturer, sdk: id.sdk };
                offline.push((key.clone(), state_of(&d.state) == DeviceState::Offline));
                if map.get(&key) != Some(&info) {
                    if map.get(&key).is_some_and(|old| old.state == DeviceState::Online) {
                        dropped.push(key.clone());
                    }
                    changed.push(key.clone());
                    map.insert(key.clone(), info);
                }
                seen.push(key);
            }
            let gone: Vec<DeviceKey> =
                map.keys().filter(|k| k.server == server_s && !seen.contains(k)).cloned().collect();
            for k in gone {
                if map.get(&k).is_some_and(|old| old.state == DeviceState::Online) {
                    dropped.push(k.clone());
                }
                offline.push((k.clone(), false));
                map.remove(&k);
                verified.remove(&k);
                changed.push(k);
            }
        }
        {
            let now = Instant::now();
            // The adb server went away (its tracker broke): its phones did not disconnect, the server did.
            if self.down_since.lock().unwrap_or_else(|e| e.into_inner()).contains_key(&server) {
                dropped.clear();
            }
            let ids = self.ids();
            for k in &dropped {
                self.health.disconnected(&ids.presented_of(k), now);
            }
            for (k, off) in &offline {
                self.health.set_offline(&ids.presented_of(k), *off, now);
            }
        }
        // A change of any path is a change of its phone (as the channel layer knows it).
        let changed: Vec<DeviceKey> = {
            let ids = self.ids();
            let mut v = changed.clone();
            v.extend(changed.iter().map(|k| ids.presented_of(k)).filter(|p| !changed.contains(p)));
            v
        };
        {
            let map = self.devices.lock().unwrap_or_else(|e| e.into_inner());
            let mut ids = self.ids();
            for k in changed.iter().filter(|k| map.get(*k).is_none_or(|d| d.state != DeviceState::Online)) {
                ids.forget(k); // learnt again at the next verification
            }
        }
        for key in changed {
            self.screen.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
            self.screen_states.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
            self.shell_v2.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
            self.gzip.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
            self.capture_streams.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
            // Its helper's stream is gone with it, or belongs to a connection that is no more.
            self.helpers.forget(&key);
            let state =
                self.devices.lock().unwrap_or_else(|e| e.into_inner()).get(&key).map_or("gone", |d| d.state.as_str());
            tracing::info!(device = %key, state, "device state changed");
            let _ = self.changes.send(key);
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            for key in to_verify {
                if self.verifying.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone()) {
                    rt.spawn(self.clone().verify(key));
                }
            }
        }
    }

    /// Proves a newly listed device answers (one `getprop`), learns its model name, then reports it online. A
    /// device that does not answer stays offline and is tried again on the next poll.
    async fn verify(self: Arc<Self>, key: DeviceKey) {
        let probe = self
            .op(&key, false, Duration::from_secs(5), |d| async move { d.shell_capped(PROBE, PROBE_OUTPUT_MAX).await })
            .await
            .and_then(|out| match out.code {
                0 => Ok(out.stdout),
                code => Err(ProtoError::new(ErrorCode::ToolInvokeFailed, format!("the probe exited {code}"))),
            });
        self.verifying.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
        let model = match probe {
            Ok(out) => Identity::parse(&out),
            Err(e) => {
                tracing::warn!(device = %key, error = %e, "device listed online but not answering; will retry");
                return;
            }
        };
        // Serial + boot id + the same adb server tell a second path (USB + Wi-Fi, `emulator-N` +
        // `127.0.0.1:N+1`) from a second phone (`device::identity`). A phone without them stays its own device.
        if let Some(proof) = super::super::identity::Proof::of(&key, &model.hw_serial, &model.boot_id) {
            // A second path of a known phone must also read what that phone's path writes (`identity::challenge`):
            // the serial and boot id alone are readable by any app. Checked and learnt under one lock, so two paths
            // verified at once cannot both skip it; failing it, the path stays its own device.
            let known = {
                let mut ids = self.ids();
                let known = ids.other_path_of(&key, &proof);
                if known.is_none() {
                    ids.learn(&key, proof.clone());
                }
                known
            };
            let merged = match known {
                None => true,
                Some(known) if self.same_phone(&known, &key).await => {
                    self.ids().learn(&key, proof);
                    true
                }
                Some(known) => {
                    tracing::warn!(device = %key, claims = %known, "reports another phone's serial and boot id but \
                        cannot read what that phone's path wrote: kept as a separate device, never a path of it");
                    false
                }
            };
            if merged {
                let (presented, paths) = {
                    let ids = self.ids();
                    let presented = ids.presented_of(&key);
                    (presented.clone(), ids.paths_of(&presented).len())
                };
                if paths > 1 {
                    tracing::info!(device = %presented, path = %key.serial, paths, "another path to the same phone");
                }
                if presented != key {
                    let _ = self.changes.send(presented);
                }
            }
        }
        self.mark_verified(&key, model);
    }

    /// Whether `path` reads the token the known phone's path just wrote (`identity::challenge`).
    async fn same_phone(&self, known: &DeviceKey, path: &DeviceKey) -> bool {
        let token = crate::protocol::ids::random_hex(16);
        let c = super::super::identity::challenge(&token);
        let d = Duration::from_secs(5);
        if self.shell_ok(known, &c.write, false, d).await.is_err() {
            return false;
        }
        let answer = self.shell_ok(path, &c.read, false, d).await;
        // The file goes whatever the new path answered (it may not be the phone at all).
        let _ = self.shell_ok(known, &c.remove, false, d).await;
        answer.is_ok_and(|out| out.trim() == token)
    }

    /// Records a device as verified reachable and, if the adb server still lists it as `device`, online.
    pub(super) fn mark_verified(&self, key: &DeviceKey, id: Identity) {
        self.verified.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), id.clone());
        let changed = {
            let mut map = self.devices.lock().unwrap_or_else(|e| e.into_inner());
            match map.get_mut(key) {
                // Only a device still pending verification flips: one that went away meanwhile stays as it is.
                Some(d) if d.state == DeviceState::Offline => {
                    d.state = DeviceState::Online;
                    d.model = id.model;
                    d.manufacturer = id.manufacturer;
                    d.sdk = id.sdk;
                    true
                }
                _ => false,
            }
        };
        if changed {
            tracing::info!(device = %key, state = "online", verified = true, "device state changed");
            let _ = self.changes.send(key.clone());
        }
    }
}
