//! One phone, several adb serials. The adb server lists a phone once per transport: USB (`R58N123ABC`) and Wi-Fi
//! debugging (`192.168.1.7:5555`, or an mDNS `adb-…._adb-tls-connect._tcp`) at the same time, or a loopback port
//! in 5555–5585 also as `emulator-5554`. A lease must follow the *physical* device, or two channels drive one
//! phone. The phone's own `ro.serialno`, read when a path is verified, tells the paths apart from the phones.
//!
//! Each physical device gets one *presented* key — the path the channel layer sees, binds and stores. It is the
//! best path when the phone first appears and then stays the same for as long as any path of the phone is listed
//! (a binding survives the USB cable being pulled while Wi-Fi remains). The other paths are hidden from the
//! channel layer, and commands go over the healthiest live path ([`rank`]).

use std::collections::HashMap;

use super::{DeviceKey, DeviceState};

#[derive(Default)]
pub struct Identities {
    /// Path → hardware serial, learned at verification.
    hardware: HashMap<DeviceKey, String>,
    /// Hardware serial → presented key.
    presented: HashMap<String, DeviceKey>,
    /// Keys that bindings restored at start-up name: such a path becomes its phone's presented key whichever
    /// path happens to be verified first, so a restart does not orphan a binding.
    preferred: std::collections::HashSet<DeviceKey>,
}

impl Identities {
    /// Records that `path` reaches the phone with hardware serial `hw`. Returns the presented key of that phone
    /// (`path` itself when it is the phone's first path).
    pub fn learn(&mut self, path: &DeviceKey, hw: &str) -> DeviceKey {
        self.hardware.insert(path.clone(), hw.to_owned());
        let current = self.presented.entry(hw.to_owned()).or_insert_with(|| path.clone());
        if self.preferred.contains(path) && !self.preferred.contains(current) {
            *current = path.clone();
        }
        current.clone()
    }

    /// See `preferred`.
    pub fn prefer(&mut self, key: &DeviceKey) {
        self.preferred.insert(key.clone());
    }

    /// Forgets a path the adb server no longer lists; the phone's presented key goes only with its last path.
    pub fn forget(&mut self, path: &DeviceKey) {
        let Some(hw) = self.hardware.remove(path) else { return };
        if !self.hardware.values().any(|h| *h == hw) {
            self.presented.remove(&hw);
        }
    }

    /// Forgets what `path` was (it went offline and will be verified again); keeps the phone's presented key
    /// while other paths remain.
    pub fn unverify(&mut self, path: &DeviceKey) {
        self.forget(path);
    }

    /// The key the channel layer knows `path` by.
    pub fn presented_of(&self, path: &DeviceKey) -> DeviceKey {
        self.hardware.get(path).and_then(|hw| self.presented.get(hw)).cloned().unwrap_or_else(|| path.clone())
    }

    /// Every known path of the phone presented as `key` (just `key` when it has no known aliases).
    pub fn paths_of(&self, key: &DeviceKey) -> Vec<DeviceKey> {
        let hw = self.presented.iter().find(|(_, k)| *k == key).map(|(hw, _)| hw.clone());
        match hw {
            Some(hw) => {
                let mut v: Vec<DeviceKey> =
                    self.hardware.iter().filter(|(_, h)| **h == hw).map(|(p, _)| p.clone()).collect();
                if !v.contains(key) {
                    v.push(key.clone());
                }
                v.sort();
                v
            }
            None => vec![key.clone()],
        }
    }

    /// Every serial the phone presented as `key` goes by: its paths' serials and its own `ro.serialno`.
    pub fn names_of(&self, key: &DeviceKey) -> Vec<String> {
        let mut v: Vec<String> = self.paths_of(key).into_iter().map(|p| p.serial).collect();
        v.extend(self.hardware.get(key).cloned());
        if let Some(hw) = self.presented.iter().find(|(_, k)| *k == key).map(|(hw, _)| hw.clone()) {
            v.push(hw);
        }
        v.sort();
        v.dedup();
        v
    }

    /// The presented key of the phone that `serial` (any of its paths) belongs to.
    pub fn resolve_serial(&self, serial: &str) -> Option<DeviceKey> {
        self.hardware.keys().find(|p| p.serial == serial).map(|p| self.presented_of(p))
    }
}

/// How good a path is for commands; lower is better. Online before unauthorized before offline; then USB before
/// an emulator console before a network transport (a cable neither drops with the Wi-Fi nor re-keys).
pub fn rank(key: &DeviceKey, state: DeviceState) -> (u8, u8) {
    let s = match state {
        DeviceState::Online => 0,
        DeviceState::Unauthorized => 1,
        DeviceState::Offline => 2,
        DeviceState::Gone => 3,
    };
    let kind = if key.serial.starts_with("emulator-") {
        1
    } else if key.serial.contains(':') || key.serial.contains("._adb-tls-connect.") {
        2
    } else {
        0
    };
    (s, kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(s: &str) -> DeviceKey {
        DeviceKey { server: "127.0.0.1:5037".into(), serial: s.into() }
    }

    #[test]
    fn paths_of_one_phone_share_the_first_key_until_the_last_goes() {
        let mut ids = Identities::default();
        assert_eq!(ids.learn(&k("10.0.0.7:5555"), "R58N"), k("10.0.0.7:5555"));
        assert_eq!(ids.learn(&k("R58N"), "R58N"), k("10.0.0.7:5555"), "the binding's key stays");
        assert_eq!(ids.presented_of(&k("R58N")), k("10.0.0.7:5555"));
        assert_eq!(ids.paths_of(&k("10.0.0.7:5555")), vec![k("10.0.0.7:5555"), k("R58N")]);
        assert_eq!(ids.resolve_serial("R58N"), Some(k("10.0.0.7:5555")));
        assert_eq!(ids.names_of(&k("10.0.0.7:5555")), vec!["10.0.0.7:5555".to_string(), "R58N".to_string()]);
        ids.forget(&k("10.0.0.7:5555"));
        assert_eq!(ids.presented_of(&k("R58N")), k("10.0.0.7:5555"), "still presented while USB remains");
        ids.forget(&k("R58N"));
        assert_eq!(ids.learn(&k("R58N"), "R58N"), k("R58N"), "a fresh start after the last path went");
        assert_eq!(ids.learn(&k("other"), "OTHER"), k("other"));
    }

    #[test]
    fn a_restored_binding_keeps_its_key() {
        let mut ids = Identities::default();
        ids.prefer(&k("R58N"));
        assert_eq!(ids.learn(&k("10.0.0.7:5555"), "R58N"), k("10.0.0.7:5555"));
        assert_eq!(ids.learn(&k("R58N"), "R58N"), k("R58N"), "the bound path takes over");
        assert_eq!(ids.presented_of(&k("10.0.0.7:5555")), k("R58N"));
    }

    #[test]
    fn usb_and_online_rank_first() {
        let on = DeviceState::Online;
        assert!(rank(&k("R58N"), on) < rank(&k("emulator-5554"), on));
        assert!(rank(&k("emulator-5554"), on) < rank(&k("127.0.0.1:5555"), on));
        assert!(rank(&k("127.0.0.1:5555"), on) < rank(&k("R58N"), DeviceState::Offline));
    }
}
