//! One phone, several adb serials. The adb server lists a phone once per transport: USB (`R58N123ABC`) and Wi-Fi
//! debugging (`192.168.1.7:5555`, or an mDNS `adb-…._adb-tls-connect._tcp`) at the same time, or a loopback port
//! in 5555–5585 also as `emulator-5554`. A lease must follow the *physical* device, or two channels drive one
//! phone.
//!
//! What a phone *says* about itself is not evidence about another phone: `ro.serialno` can be set to anything
//! (cheap phones really share `0123456789ABCDEF`; a hostile one copies a neighbour's), and merging by it sent an
//! agent's taps and typed text to an impostor. Two paths are merged only with a [`Proof`] a phone cannot fake about
//! another phone: both are listed by the *same adb server* and report the same `ro.serialno` *and* the same
//! `/proc/sys/kernel/random/boot_id` (a random UUID the kernel draws at every boot, readable only from a shell on
//! that phone). Paths on different adb servers are never merged; a path whose boot id cannot be read stays its
//! own device. The serial and the boot id are readable by any *app* on the phone, though, so a relay an app runs
//! could answer with both: a second path is merged only once it also reads a token the known path just wrote
//! where no app can read ([`challenge`]) — else it stays a device of its own and never carries the phone's
//! commands, also when the real path goes offline.
//!
//! Each physical device gets one *presented* key — the path the channel layer sees, binds and stores. It is the
//! best path when the phone first appears and then stays the same for as long as any path of the phone is listed
//! (a binding survives the USB cable being pulled while Wi-Fi remains). The other paths are hidden from the
//! channel layer, and commands go over the healthiest live path ([`rank`]) among the paths proven to be that
//! phone — never another.

use std::collections::HashMap;

use super::key::{DeviceKey, DeviceState};

/// Evidence that a path reaches one particular phone: paths with equal proofs are one phone.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Proof {
    /// The adb server listing the path (`DeviceKey::server`): a phone cannot appear on another box's server.
    server: String,
    /// `ro.serialno` as reported.
    serialno: String,
    /// `/proc/sys/kernel/random/boot_id`, lower-case UUID.
    boot_id: String,
}

impl Proof {
    /// The proof for `path`, or `None` when the phone gave no serial or no well-formed boot id (it then stays its
    /// own device).
    pub fn of(path: &DeviceKey, serialno: &str, boot_id: &str) -> Option<Proof> {
        let boot_id = boot_id.trim().to_ascii_lowercase();
        let uuid = boot_id.len() == 36
            && boot_id.char_indices().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => c == '-',
                _ => c.is_ascii_hexdigit(),
            });
        (uuid && !serialno.is_empty()).then(|| Proof {
            server: path.server.clone(),
            serialno: serialno.to_owned(),
            boot_id,
        })
    }
}

#[derive(Default)]
pub struct Identities {
    /// Path → its proof, learned at verification.
    hardware: HashMap<DeviceKey, Proof>,
    /// Proof → presented key.
    presented: HashMap<Proof, DeviceKey>,
    /// Keys that bindings restored at start-up name: such a path becomes its phone's presented key whichever
    /// path happens to be verified first, so a restart does not orphan a binding.
    preferred: std::collections::HashSet<DeviceKey>,
}

impl Identities {
    /// Records that `path` reaches the phone `proof` names. Returns the presented key of that phone (`path`
    /// itself when it is the phone's first path).
    pub fn learn(&mut self, path: &DeviceKey, proof: Proof) -> DeviceKey {
        debug_assert_eq!(proof.server, path.server, "a proof is about a path of its own adb server");
        self.hardware.insert(path.clone(), proof.clone());
        let current = self.presented.entry(proof).or_insert_with(|| path.clone());
        if self.preferred.contains(path) && !self.preferred.contains(current) {
            *current = path.clone();
        }
        current.clone()
    }

    /// The presented key of the phone `proof` names if a path other than `path` already proved it: learning
    /// `path` would merge it into that phone (the caller then demands the stronger proof, see [`challenge`]).
    pub fn other_path_of(&self, path: &DeviceKey, proof: &Proof) -> Option<DeviceKey> {
        if !self.hardware.iter().any(|(p, h)| p != path && h == proof) {
            return None;
        }
        self.presented.get(proof).cloned()
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

    /// The adb serials of every path proven to be the phone presented as `key` (what the allowlist and the wall
    /// match). Never the `ro.serialno` the phone reports: that is a claim, not a path.
    pub fn names_of(&self, key: &DeviceKey) -> Vec<String> {
        let mut v: Vec<String> = self.paths_of(key).into_iter().map(|p| p.serial).collect();
        v.sort();
        v.dedup();
        v
    }

    /// The presented key of the phone that `serial` (any of its paths) belongs to.
    pub fn resolve_serial(&self, serial: &str) -> Option<DeviceKey> {
        self.hardware.keys().find(|p| p.serial == serial).map(|p| self.presented_of(p))
    }
}

/// The second half of a merge's proof. The serial and the boot id are readable by any app on a phone, so a relay
/// an app runs (or a phone that copied them) can answer with another phone's pair: merged, it would carry the
/// phone's commands as soon as the real path went offline. So a second path is merged only when it reads what
/// the first path just wrote where no app can read: a random token in a new `umask 077` file of the shell user
/// under `/data/local/tmp` (an app's uid cannot open it, SELinux aside). A relay without the phone's shell cannot
/// answer it; one that can is a real path to the phone.
pub struct Challenge {
    /// Run over the known path: writes the token.
    pub write: String,
    /// Run over the new path: must print the token.
    pub read: String,
    /// Run over the known path afterwards, whatever the answer.
    pub remove: String,
}

pub fn challenge(token: &str) -> Challenge {
    let file = format!("/data/local/tmp/xagent-id-{}", &token[..token.len().min(12)]);
    Challenge {
        write: format!("umask 077; echo {token} > {file}"),
        read: format!("cat {file}"),
        remove: format!("rm -f {file}"),
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

    const BOOT: &str = "8c6f1c2e-5b7a-4d3e-9f10-2a4b6c8d0e1f";

    fn p(path: &str, serialno: &str) -> Proof {
        Proof::of(&k(path), serialno, BOOT).unwrap()
    }

    #[test]
    fn paths_of_one_phone_share_the_first_key_until_the_last_goes() {
        let mut ids = Identities::default();
        assert_eq!(ids.learn(&k("10.0.0.7:5555"), p("10.0.0.7:5555", "R58N")), k("10.0.0.7:5555"));
        assert_eq!(ids.learn(&k("R58N"), p("R58N", "R58N")), k("10.0.0.7:5555"), "the binding's key stays");
        assert_eq!(ids.presented_of(&k("R58N")), k("10.0.0.7:5555"));
        assert_eq!(ids.paths_of(&k("10.0.0.7:5555")), vec![k("10.0.0.7:5555"), k("R58N")]);
        assert_eq!(ids.resolve_serial("R58N"), Some(k("10.0.0.7:5555")));
        assert_eq!(ids.names_of(&k("10.0.0.7:5555")), vec!["10.0.0.7:5555".to_string(), "R58N".to_string()]);
        ids.forget(&k("10.0.0.7:5555"));
        assert_eq!(ids.presented_of(&k("R58N")), k("10.0.0.7:5555"), "still presented while USB remains");
        ids.forget(&k("R58N"));
        assert_eq!(ids.learn(&k("R58N"), p("R58N", "R58N")), k("R58N"), "a fresh start after the last path went");
        assert_eq!(ids.learn(&k("other"), p("other", "OTHER")), k("other"));
    }

    /// Issue 22 item 2: what a phone claims is no evidence about another phone.
    #[test]
    fn only_the_same_server_serial_and_boot_id_merge() {
        let mut ids = Identities::default();
        ids.learn(&k("R58N"), p("R58N", "R58N"));
        // An impostor reporting the same ro.serialno, with its own boot id: its own device.
        let other_boot = Proof::of(&k("10.0.0.9:5555"), "R58N", "00000000-1111-2222-3333-444444444444").unwrap();
        assert_eq!(ids.learn(&k("10.0.0.9:5555"), other_boot), k("10.0.0.9:5555"));
        assert_eq!(ids.paths_of(&k("R58N")), vec![k("R58N")]);
        // The same serial and boot id on another adb server: never merged (its `Proof` names its server).
        let far = DeviceKey { server: "127.0.0.1:5038".into(), serial: "10.0.0.8:5555".into() };
        assert_eq!(ids.learn(&far, Proof::of(&far, "R58N", BOOT).unwrap()), far);
        assert_eq!(ids.names_of(&k("R58N")), vec!["R58N".to_string()], "never the claimed serial of another path");
        // No readable boot id, or no serial: no proof.
        assert!(Proof::of(&k("x"), "R58N", "").is_none());
        assert!(Proof::of(&k("x"), "R58N", "cat: /proc/sys/kernel/random/boot_id: Permission denied").is_none());
        assert!(Proof::of(&k("x"), "R58N", "8c6f1c2e-5b7a-4d3e-9f10-2a4b6c8d0e1").is_none(), "35 characters");
        assert!(Proof::of(&k("x"), "", BOOT).is_none());
        assert_eq!(Proof::of(&k("x"), "R", &BOOT.to_uppercase()), Proof::of(&k("x"), "R", &format!(" {BOOT}\r\n")));
    }

    #[test]
    fn a_restored_binding_keeps_its_key() {
        let mut ids = Identities::default();
        ids.prefer(&k("R58N"));
        assert_eq!(ids.learn(&k("10.0.0.7:5555"), p("10.0.0.7:5555", "R58N")), k("10.0.0.7:5555"));
        assert_eq!(ids.learn(&k("R58N"), p("R58N", "R58N")), k("R58N"), "the bound path takes over");
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
