//! Per-phone health (battery level, temperature, charging, free storage, uptime, disconnects) and the state of the
//! recovery ladder (`recovery.rs`), kept by the tracker side for the wall, the API and `/metrics` to read.
//!
//! Reads cost the phones almost nothing: at most one [`formats::HEALTH_COMMAND`] round trip per phone every
//! [`READ_EVERY`], never while another command for that phone is in flight (an agent's call waits for nobody: the
//! health read simply tries at a later tick), each bounded by [`READ_DEADLINE`] and [`OUTPUT_MAX`]. Everything a
//! phone prints is parsed in `formats.rs` with bounded, checked arithmetic. The book holds at most [`MAX_PHONES`]
//! phones and [`MAX_DISCONNECTS_KEPT`] disconnect times per phone. Disconnect times also go to a sink `run.rs` wires
//! to the store, and the last hour's come back at start-up ([`Book::restore_disconnects`]): a restart of the
//! connector does not make a flapping phone look healthy. `disconnects_total` stays "since the connector started".

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Deserialize;

use super::formats::HealthText;
use super::key::DeviceKey;

/// A phone's health is read at most this often.
pub const READ_EVERY: Duration = Duration::from_secs(30);
/// How often the monitor looks for phones due for a read.
pub const TICK: Duration = Duration::from_secs(2);
/// Deadline of one health read, the whole round trip.
pub const READ_DEADLINE: Duration = Duration::from_secs(10);
/// Bytes a health read may print (honest phones print ~1-3 KB; Samsung's vendor extras included).
pub const OUTPUT_MAX: usize = 64 * 1024;
/// Disconnects are counted over this window.
pub const DISCONNECT_WINDOW: Duration = Duration::from_secs(3600);
/// Disconnect times kept per phone (a phone flapping every second for an hour still costs a bounded few KB).
pub const MAX_DISCONNECTS_KEPT: usize = 1000;
/// Phones the book remembers (the oldest-read are dropped first past it).
pub const MAX_PHONES: usize = 1024;

/// Warning thresholds (policy file key `health`; every field optional).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct Thresholds {
    /// Battery temperature at or above which a phone is `hot` (°C).
    pub hot_celsius: u8,
    /// Battery level below which an unplugged phone is `battery_low` (%).
    pub battery_low_percent: u8,
    /// Free bytes on /data below which a phone is `storage_low` (MB of 10^6 bytes).
    pub storage_low_mb: u64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds { hot_celsius: 45, battery_low_percent: 15, storage_low_mb: 500 }
    }
}

impl Thresholds {
    pub fn validate(&self) -> Result<(), String> {
        if self.hot_celsius > 100 {
            return Err(format!("health.hot_celsius must be within 0..100, not {}", self.hot_celsius));
        }
        if self.battery_low_percent > 100 {
            return Err(format!("health.battery_low_percent must be within 0..100, not {}", self.battery_low_percent));
        }
        if self.storage_low_mb > 1 << 30 {
            return Err("health.storage_low_mb is larger than any phone".into());
        }
        Ok(())
    }
}

/// One health read.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    pub battery_percent: Option<u8>,
    pub temperature_celsius: Option<f64>,
    /// On external power (AC, USB, wireless or dock).
    pub plugged: bool,
    /// `charging`, `discharging`, `not_charging`, `full`, `unknown` (BatteryManager).
    pub battery_status: &'static str,
    pub storage_free_bytes: Option<u64>,
    pub storage_total_bytes: Option<u64>,
    pub uptime_s: Option<u64>,
    /// When it was read (Unix ms).
    pub read_ms: u64,
}

impl Reading {
    pub fn from_text(t: &HealthText, read_ms: u64) -> Reading {
        Reading {
            battery_percent: t.battery.level.and_then(|l| u8::try_from(l).ok()),
            temperature_celsius: t.battery.temperature_tenths.map(|t| f64::from(t) / 10.0),
            plugged: t.battery.plugged,
            battery_status: t.battery.status,
            storage_free_bytes: t.storage.map(|s| s.free_bytes),
            storage_total_bytes: t.storage.map(|s| s.total_bytes),
            uptime_s: t.uptime_s,
            read_ms,
        }
    }
}

#[derive(Default)]
struct Phone {
    reading: Option<Reading>,
    last_attempt: Option<Instant>,
    disconnects: VecDeque<Instant>,
    disconnects_total: u64,
    /// Commands in a row that ended in `device_timeout` (any success resets it).
    timeouts_in_a_row: u32,
    /// Since when the adb server lists it `offline` (not `unauthorized`, not gone).
    offline_since: Option<Instant>,
    /// The recovery step running now (`reconnect`, `recover_command`), if any.
    recovering: Option<&'static str>,
    /// Set when the recovery ladder ran out of steps; cleared when the phone answers again.
    unhealthy: Option<String>,
    /// Last run of the operator's recover command (rate limit).
    command_ran: Option<Instant>,
    /// When the recovery ladder last reconnected the phone (`adb.rs`, `explain_cut`).
    reconnected: Option<Instant>,
    /// Why a lease's settings are not restored on it yet (`conditions.rs`): no agent gets it meanwhile.
    not_restored: Option<String>,
}

/// What the wall, the API and `/metrics` show of one phone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub reading: Option<Reading>,
    pub disconnects_last_hour: u64,
    pub disconnects_total: u64,
    pub unhealthy: Option<String>,
    pub recovering: Option<&'static str>,
    pub not_restored: Option<String>,
}

/// A warning about a phone: stable code, human message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    pub code: &'static str,
    pub message: String,
}

impl Snapshot {
    /// The warnings this snapshot raises under `t`: `hot`, `battery_low` (unplugged only), `storage_low`,
    /// `unhealthy`.
    pub fn warnings(&self, t: &Thresholds) -> Vec<Warning> {
        let mut out = Vec::new();
        if let Some(r) = &self.reading {
            if let Some(c) = r.temperature_celsius.filter(|c| *c >= f64::from(t.hot_celsius)) {
                out.push(Warning {
                    code: "hot",
                    message: format!(
                        "The battery is at {c:.1} °C (warning from {} °C): unplug it or give it air; a phone kept \
                         hot on a hub swells.",
                        t.hot_celsius
                    ),
                });
            }
            if let Some(l) = r.battery_percent.filter(|l| *l < t.battery_low_percent && !r.plugged) {
                out.push(Warning {
                    code: "battery_low",
                    message: format!(
                        "The battery is at {l} % and the phone is not on power: check its cable or hub port."
                    ),
                });
            }
            if let Some(free) = r.storage_free_bytes.filter(|f| *f < t.storage_low_mb.saturating_mul(1_000_000)) {
                out.push(Warning {
                    code: "storage_low",
                    message: format!(
                        "Only {} MB free on /data (warning below {} MB): installs and screenshots will fail.",
                        free / 1_000_000,
                        t.storage_low_mb
                    ),
                });
            }
        }
        if let Some(why) = &self.unhealthy {
            out.push(Warning { code: "unhealthy", message: why.clone() });
        }
        if let Some(why) = &self.not_restored {
            out.push(Warning { code: "not_restored", message: format!("Not handed out: {why}.") });
        }
        out
    }
}

/// Where a disconnect is recorded beyond memory (phone, wall-clock ms); `run.rs` wires it to the store.
pub type DisconnectSink = Arc<dyn Fn(&DeviceKey, u64) + Send + Sync>;

/// The per-phone book (owned by `AdbBackend`).
#[derive(Default)]
pub struct Book {
    phones: Mutex<BTreeMap<DeviceKey, Phone>>,
    thresholds: Mutex<Thresholds>,
    persist: Mutex<Option<DisconnectSink>>,
}

impl Book {
    fn with<T>(&self, key: &DeviceKey, f: impl FnOnce(&mut Phone) -> T) -> T {
        let mut g = self.phones.lock().unwrap_or_else(|e| e.into_inner());
        if !g.contains_key(key) && g.len() >= MAX_PHONES {
            // Forget the phone whose last read is oldest (a long-gone one).
            let oldest = g.iter().min_by_key(|(_, p)| p.last_attempt).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                g.remove(&k);
            }
        }
        f(g.entry(key.clone()).or_default())
    }

    pub fn set_thresholds(&self, t: Thresholds) {
        *self.thresholds.lock().unwrap_or_else(|e| e.into_inner()) = t;
    }

    pub fn thresholds(&self) -> Thresholds {
        self.thresholds.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// True (and the attempt recorded) when the phone's last read attempt is [`READ_EVERY`] old or more.
    pub fn claim_read(&self, key: &DeviceKey, now: Instant) -> bool {
        self.with(key, |p| {
            let due = p.last_attempt.is_none_or(|t| now.duration_since(t) >= READ_EVERY);
            if due {
                p.last_attempt = Some(now);
            }
            due
        })
    }

    pub fn record_reading(&self, key: &DeviceKey, r: Reading) {
        self.with(key, |p| p.reading = Some(r));
    }

    /// The phone left the online state (the adb server dropped or demoted it).
    pub fn disconnected(&self, key: &DeviceKey, now: Instant) {
        self.with(key, |p| {
            p.disconnects_total = p.disconnects_total.saturating_add(1);
            p.disconnects.push_back(now);
            while p.disconnects.len() > MAX_DISCONNECTS_KEPT {
                p.disconnects.pop_front();
            }
        });
        // Outside the book's lock: the sink writes to disk.
        let sink = self.persist.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(sink) = sink {
            let ago = u64::try_from(now.elapsed().as_millis()).unwrap_or(u64::MAX);
            sink(key, crate::protocol::now_ms().saturating_sub(ago));
        }
    }

    /// Where disconnects are recorded from now on (the store: see [`Book::restore_disconnects`]).
    pub fn set_persist(&self, sink: DisconnectSink) {
        *self.persist.lock().unwrap_or_else(|e| e.into_inner()) = Some(sink);
    }

    /// Puts back disconnect times recorded before a restart (wall-clock ms): those within
    /// [`DISCONNECT_WINDOW`] of `now_ms` count in `disconnects_last_hour` again. Times from the future (a clock
    /// step back) count as now; at most [`MAX_DISCONNECTS_KEPT`] are kept, the newest.
    pub fn restore_disconnects(&self, key: &DeviceKey, times_ms: &[u64], now: Instant, now_ms: u64) {
        let window = u64::try_from(DISCONNECT_WINDOW.as_millis()).unwrap_or(u64::MAX);
        let back: Vec<Instant> = times_ms
            .iter()
            .map(|t| now_ms.saturating_sub(*t))
            .filter(|ago| *ago < window)
            .filter_map(|ago| now.checked_sub(Duration::from_millis(ago)))
            .collect();
        if back.is_empty() {
            return;
        }
        self.with(key, |p| {
            p.disconnects.extend(back);
            p.disconnects.make_contiguous().sort();
            while p.disconnects.len() > MAX_DISCONNECTS_KEPT {
                p.disconnects.pop_front();
            }
        });
    }

    /// The adb server lists the phone `offline` now (`true`) or in another state (`false`).
    pub fn set_offline(&self, key: &DeviceKey, offline: bool, now: Instant) {
        self.with(key, |p| match (offline, p.offline_since) {
            (true, None) => p.offline_since = Some(now),
            (false, Some(_)) => p.offline_since = None,
            _ => {}
        });
    }

    /// How many commands for the phone timed out in a row (0: its last command was answered).
    pub fn timeouts_in_a_row(&self, key: &DeviceKey) -> u32 {
        self.phones.lock().unwrap_or_else(|e| e.into_inner()).get(key).map_or(0, |p| p.timeouts_in_a_row)
    }

    /// A command for the phone ended: in `device_timeout` or otherwise. Returns the timeouts in a row now. An
    /// answer of any kind proves the phone alive: it clears `unhealthy`.
    pub fn command_ended(&self, key: &DeviceKey, timed_out: bool) -> u32 {
        self.with(key, |p| {
            if timed_out {
                p.timeouts_in_a_row = p.timeouts_in_a_row.saturating_add(1);
            } else {
                p.timeouts_in_a_row = 0;
                if p.recovering.is_none() {
                    p.unhealthy = None;
                }
            }
            p.timeouts_in_a_row
        })
    }

    /// Phones that need the recovery ladder now: `timeouts` commands in a row timed out, or offline for
    /// `offline_after`; not already recovering and not already given up on (unhealthy).
    pub fn due_for_recovery(&self, timeouts: u32, offline_after: Duration, now: Instant) -> Vec<(DeviceKey, String)> {
        let g = self.phones.lock().unwrap_or_else(|e| e.into_inner());
        g.iter()
            .filter(|(_, p)| p.recovering.is_none() && p.unhealthy.is_none())
            .filter_map(|(k, p)| {
                if p.timeouts_in_a_row >= timeouts {
                    Some((k.clone(), format!("{} commands in a row timed out", p.timeouts_in_a_row)))
                } else {
                    let off = now.duration_since(p.offline_since?);
                    (off >= offline_after).then(|| (k.clone(), format!("offline for {} s", off.as_secs())))
                }
            })
            .collect()
    }

    pub fn set_recovering(&self, key: &DeviceKey, step: Option<&'static str>) {
        self.with(key, |p| p.recovering = step);
    }

    /// The ladder brought the phone back: the counters start over.
    pub fn recovered(&self, key: &DeviceKey) {
        self.with(key, |p| {
            p.recovering = None;
            p.unhealthy = None;
            p.timeouts_in_a_row = 0;
            p.offline_since = None;
        });
    }

    /// The ladder is about to reconnect the phone: commands running on it now end because of it.
    pub fn reconnecting(&self, key: &DeviceKey, now: Instant) {
        self.with(key, |p| p.reconnected = Some(now));
    }

    /// Whether the ladder reconnected the phone at or after `since` (without creating an entry).
    pub fn reconnected_since(&self, key: &DeviceKey, since: Instant) -> bool {
        let g = self.phones.lock().unwrap_or_else(|e| e.into_inner());
        g.get(key).and_then(|p| p.reconnected).is_some_and(|at| at >= since)
    }

    /// Sets or clears why the phone's lease settings are not restored (`conditions.rs`).
    pub fn set_not_restored(&self, key: &DeviceKey, why: Option<String>) {
        self.with(key, |p| p.not_restored = why);
    }

    pub fn mark_unhealthy(&self, key: &DeviceKey, why: String) {
        self.with(key, |p| {
            p.recovering = None;
            p.unhealthy = Some(why);
        });
    }

    /// Claims a run of the recover command for the phone: false when it ran less than `every` ago.
    pub fn claim_command(&self, key: &DeviceKey, every: Duration, now: Instant) -> bool {
        self.with(key, |p| {
            let ok = p.command_ran.is_none_or(|t| now.duration_since(t) >= every);
            if ok {
                p.command_ran = Some(now);
            }
            ok
        })
    }

    pub fn snapshot(&self, key: &DeviceKey, now: Instant) -> Snapshot {
        let g = self.phones.lock().unwrap_or_else(|e| e.into_inner());
        g.get(key).map(|p| snap(p, now)).unwrap_or_default()
    }

    pub fn all(&self, now: Instant) -> Vec<(DeviceKey, Snapshot)> {
        let g = self.phones.lock().unwrap_or_else(|e| e.into_inner());
        g.iter().map(|(k, p)| (k.clone(), snap(p, now))).collect()
    }
}

fn snap(p: &Phone, now: Instant) -> Snapshot {
    let recent = p.disconnects.iter().filter(|t| now.duration_since(**t) < DISCONNECT_WINDOW).count() as u64;
    Snapshot {
        reading: p.reading.clone(),
        disconnects_last_hour: recent,
        disconnects_total: p.disconnects_total,
        unhealthy: p.unhealthy.clone(),
        recovering: p.recovering,
        not_restored: p.not_restored.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restored_disconnects_count_within_the_hour_only() {
        let (book, key) = (Book::default(), DeviceKey { server: "s".into(), serial: "A".into() });
        let (now, now_ms) = (Instant::now(), 10_000_000_000u64);
        let persisted = Arc::new(Mutex::new(Vec::new()));
        let p = persisted.clone();
        book.set_persist(Arc::new(move |k, t| p.lock().unwrap().push((k.serial.clone(), t))));
        // 2 min ago, 59 min ago, 61 min ago (out of the window), and one from a clock that stepped back.
        book.restore_disconnects(
            &key,
            &[now_ms - 120_000, now_ms - 59 * 60_000, now_ms - 61 * 60_000, now_ms + 5],
            now,
            now_ms,
        );
        let s = book.snapshot(&key, now);
        assert_eq!((s.disconnects_last_hour, s.disconnects_total), (3, 0), "{s:?}");
        assert!(persisted.lock().unwrap().is_empty(), "restoring writes nothing back");
        book.disconnected(&key, now);
        assert_eq!(book.snapshot(&key, now).disconnects_last_hour, 4);
        assert_eq!(persisted.lock().unwrap().len(), 1, "a new disconnect goes to the sink");
    }

    fn key() -> DeviceKey {
        DeviceKey { server: "127.0.0.1:5037".into(), serial: "A".into() }
    }

    #[test]
    fn reads_are_rate_limited_and_disconnects_windowed() {
        let b = Book::default();
        let t0 = Instant::now();
        assert!(b.claim_read(&key(), t0));
        assert!(!b.claim_read(&key(), t0 + Duration::from_secs(29)));
        assert!(b.claim_read(&key(), t0 + READ_EVERY));
        for _ in 0..(MAX_DISCONNECTS_KEPT + 5) {
            b.disconnected(&key(), t0);
        }
        let s = b.snapshot(&key(), t0 + Duration::from_secs(10));
        assert_eq!((s.disconnects_last_hour, s.disconnects_total), (MAX_DISCONNECTS_KEPT as u64, 1005));
        assert_eq!(b.snapshot(&key(), t0 + DISCONNECT_WINDOW).disconnects_last_hour, 0);
    }

    #[test]
    fn warnings_follow_the_thresholds() {
        let r = Reading {
            battery_percent: Some(10),
            temperature_celsius: Some(45.0),
            plugged: false,
            battery_status: "discharging",
            storage_free_bytes: Some(499_000_000),
            storage_total_bytes: Some(1 << 40),
            uptime_s: Some(5),
            read_ms: 0,
        };
        let s = Snapshot { reading: Some(r.clone()), unhealthy: Some("gave up".into()), ..Default::default() };
        let codes: Vec<_> = s.warnings(&Thresholds::default()).into_iter().map(|w| w.code).collect();
        assert_eq!(codes, ["hot", "battery_low", "storage_low", "unhealthy"]);
        // Plugged in: a low battery is charging, not a warning; 44.9 °C is not hot.
        let s = Snapshot {
            reading: Some(Reading { plugged: true, temperature_celsius: Some(44.9), ..r }),
            ..Default::default()
        };
        let codes: Vec<_> = s.warnings(&Thresholds::default()).into_iter().map(|w| w.code).collect();
        assert_eq!(codes, ["storage_low"]);
        let t = Thresholds { storage_low_mb: 100, ..Default::default() };
        assert!(s.warnings(&t).is_empty());
    }

    #[test]
    fn timeouts_trigger_recovery_once_and_an_answer_clears_it() {
        let b = Book::default();
        let now = Instant::now();
        for _ in 0..3 {
            b.command_ended(&key(), true);
        }
        assert_eq!(b.due_for_recovery(3, Duration::from_secs(60), now).len(), 1);
        b.mark_unhealthy(&key(), "nothing helped".into());
        assert!(b.due_for_recovery(3, Duration::from_secs(60), now).is_empty(), "not again while unhealthy");
        b.command_ended(&key(), false);
        assert_eq!(b.snapshot(&key(), now).unhealthy, None);
        b.set_offline(&key(), true, now);
        assert!(b.due_for_recovery(3, Duration::from_secs(60), now + Duration::from_secs(59)).is_empty());
        assert_eq!(b.due_for_recovery(3, Duration::from_secs(60), now + Duration::from_secs(60)).len(), 1);
        assert!(b.claim_command(&key(), Duration::from_secs(600), now));
        assert!(!b.claim_command(&key(), Duration::from_secs(600), now + Duration::from_secs(599)));
    }
}
