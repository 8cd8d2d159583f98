//! Device matching at bind (device farms): the `adb_device` flow's optional constraints — `model`,
//! `manufacturer`, `min_sdk`, `max_sdk`, and operator `labels` (assigned to serials in the policy file) — pick a
//! free device that satisfies every one. Pure functions over the device snapshot, so every rule is unit-tested;
//! `auth.rs` applies the result. When nothing can be taken, the error says why ("2 devices match, both held by
//! other channels"), because the person binding cannot see the farm.

use std::collections::HashSet;

use serde_json::{Map, Value};

use crate::device::{DeviceInfo, DeviceKey, DeviceState};
use crate::policy::{valid_label, Labels, MAX_LABEL_LEN};
use crate::protocol::errors::{ErrorCode, ProtoError};

/// The `adb_device` input fields that constrain the device (besides `serial`).
pub const CONSTRAINT_FIELDS: &[&str] = &["model", "manufacturer", "min_sdk", "max_sdk", "labels"];
/// Labels one bind may require.
pub const MAX_LABELS: usize = 16;

/// What a bind without a serial asks of the device. Empty = any device.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Constraints {
    pub model: Option<String>,
    pub manufacturer: Option<String>,
    pub min_sdk: Option<u32>,
    pub max_sdk: Option<u32>,
    pub labels: Vec<String>,
}

impl Constraints {
    pub fn is_empty(&self) -> bool {
        *self == Constraints::default()
    }

    /// Reads the constraint fields of an `auth.start` input (form values arrive as strings: numbers and the
    /// comma-separated label list are accepted as strings too; empty strings mean "not given").
    pub fn from_input(input: &Map<String, Value>) -> Result<Constraints, ProtoError> {
        let bad = |m: String| ProtoError::new(ErrorCode::AuthInputInvalid, m);
        let text = |k: &str| -> Result<Option<String>, ProtoError> {
            match input.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.trim().is_empty() => Ok(None),
                Some(Value::String(s)) if s.trim().chars().count() <= 100 && !s.chars().any(char::is_control) => {
                    Ok(Some(s.trim().to_owned()))
                }
                Some(_) => Err(bad(format!("`{k}` must be a text of at most 100 characters"))),
            }
        };
        let sdk = |k: &str| -> Result<Option<u32>, ProtoError> {
            let n = match input.get(k) {
                None | Some(Value::Null) => return Ok(None),
                Some(Value::String(s)) if s.trim().is_empty() => return Ok(None),
                Some(Value::String(s)) => s.trim().parse::<u32>().ok(),
                Some(Value::Number(n)) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
                Some(_) => None,
            };
            match n {
                Some(n) if (1..=1000).contains(&n) => Ok(Some(n)),
                _ => Err(bad(format!("`{k}` must be an Android API level (an integer 1–1000, e.g. 30)"))),
            }
        };
        let labels: Vec<String> = match input.get("labels") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => {
                s.split(',').map(str::trim).filter(|l| !l.is_empty()).map(str::to_owned).collect()
            }
            Some(Value::Array(a)) => {
                let mut v = Vec::new();
                for l in a {
                    v.push(l.as_str().ok_or_else(|| bad("`labels` must be strings".into()))?.trim().to_owned());
                }
                v
            }
            Some(_) => return Err(bad("`labels` must be a list of labels or a comma-separated text".into())),
        };
        if labels.len() > MAX_LABELS {
            return Err(bad(format!("at most {MAX_LABELS} labels, got {}", labels.len())));
        }
        if let Some(l) = labels.iter().find(|l| !valid_label(l)) {
            return Err(bad(format!(
                "label {:?} is not valid (printable ASCII without spaces or commas, at most {MAX_LABEL_LEN} chars)",
                l.chars().take(80).collect::<String>()
            )));
        }
        let c = Constraints {
            model: text("model")?,
            manufacturer: text("manufacturer")?,
            min_sdk: sdk("min_sdk")?,
            max_sdk: sdk("max_sdk")?,
            labels,
        };
        if let (Some(lo), Some(hi)) = (c.min_sdk, c.max_sdk) {
            if lo > hi {
                return Err(bad(format!("min_sdk ({lo}) is above max_sdk ({hi})")));
            }
        }
        Ok(c)
    }

    /// `model="Pixel 7", min_sdk=30`, for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(m) = &self.model {
            parts.push(format!("model={m:?}"));
        }
        if let Some(m) = &self.manufacturer {
            parts.push(format!("manufacturer={m:?}"));
        }
        if let Some(n) = self.min_sdk {
            parts.push(format!("min_sdk={n}"));
        }
        if let Some(n) = self.max_sdk {
            parts.push(format!("max_sdk={n}"));
        }
        if !self.labels.is_empty() {
            parts.push(format!("labels={:?}", self.labels));
        }
        parts.join(", ")
    }

    /// Whether `d` satisfies every constraint. Model and manufacturer compare case-insensitively, with `_` and
    /// spaces alike (the adb server lists `Pixel_7`); an unknown SDK level never satisfies an SDK bound.
    pub fn matches(&self, d: &DeviceInfo, labels: &Labels) -> bool {
        let norm = |s: &str| s.trim().replace('_', " ").to_lowercase();
        let has = labels.get(&d.key.serial);
        self.model.as_ref().is_none_or(|m| norm(m) == norm(&d.model))
            && self.manufacturer.as_ref().is_none_or(|m| norm(m) == norm(&d.manufacturer))
            && self.min_sdk.is_none_or(|lo| d.sdk.is_some_and(|s| s >= lo))
            && self.max_sdk.is_none_or(|hi| d.sdk.is_some_and(|s| s <= hi))
            && self.labels.iter().all(|l| has.is_some_and(|h| h.contains(l)))
    }
}

/// A device chosen for binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    Online(DeviceKey),
    /// Free and allowed, but waiting for the person to accept the RSA prompt.
    NeedsApproval(DeviceKey),
}

/// What to do when every matching phone is held (the end of a `device_busy` message).
pub const FREE_ONE: &str =
    "try again when one is released (auth.logout of its channel, or Release on the device wall) or connect another phone";

/// What to do when every matching phone is held and at least one of them by an operator: a takeover ends by
/// itself (return, the operator's logout, or the idle timeout), so waiting is the usual answer.
pub const WAIT_FOR_OPERATOR: &str = "try again in a minute or two (a takeover ends when the operator returns the \
                                     phone or stops using it; a channel's phone is freed by its auth.logout or \
                                     Release on the device wall) or connect another phone";

/// The phones nobody may pool-bind right now: bound to a channel (`channels`) or taken over by an operator on the
/// device wall (`operator`; the agent would get `operator_control` on every call).
#[derive(Clone, Debug, Default)]
pub struct Held {
    pub channels: HashSet<DeviceKey>,
    pub operator: HashSet<DeviceKey>,
}

impl Held {
    fn contains(&self, k: &DeviceKey) -> bool {
        self.channels.contains(k) || self.operator.contains(k)
    }
}

/// Picks the first free online allowed device matching `c`, else the first free unauthorized one (whose model and
/// SDK are unknown until approved: it can satisfy label constraints only). Free = no channel holds it and no
/// operator has taken it over. Fails with a breakdown of why.
pub fn choose(
    c: &Constraints,
    devices: &[DeviceInfo],
    allowed: impl Fn(&DeviceKey) -> bool,
    held: &Held,
    labels: &Labels,
) -> Result<Choice, ProtoError> {
    let allowed_devices: Vec<&DeviceInfo> = devices.iter().filter(|d| allowed(&d.key)).collect();
    let matching: Vec<&DeviceInfo> = allowed_devices.iter().copied().filter(|d| c.matches(d, labels)).collect();
    let free = |st: DeviceState| matching.iter().find(|d| d.state == st && !held.contains(&d.key));
    if let Some(d) = free(DeviceState::Online) {
        return Ok(Choice::Online(d.key.clone()));
    }
    if let Some(d) = free(DeviceState::Unauthorized) {
        return Ok(Choice::NeedsApproval(d.key.clone()));
    }
    if c.is_empty() && matching.is_empty() {
        return Err(ProtoError::new(ErrorCode::DeviceNotFound, "no free online device is available to bind"));
    }
    let what = if c.is_empty() { String::new() } else { format!(" {}", c.describe()) };
    if matching.is_empty() {
        // Say what there is, so the person can correct the constraint (models and SDK levels, never serials).
        let mut seen: Vec<String> = allowed_devices
            .iter()
            .filter(|d| d.state == DeviceState::Online)
            .map(|d| {
                let sdk = d.sdk.map_or("SDK ?".to_owned(), |s| format!("SDK {s}"));
                format!("{} ({}, {sdk})", d.model, if d.manufacturer.is_empty() { "?" } else { &d.manufacturer })
            })
            .collect();
        seen.sort();
        seen.dedup();
        let seen = if seen.is_empty() { "none is online".to_owned() } else { format!("online: {}", seen.join("; ")) };
        return Err(ProtoError::new(ErrorCode::DeviceNotFound, format!("no device matches{what} ({seen})")));
    }
    let n = matching.len();
    // A phone both bound and taken over counts as the operator's: that is what ends first.
    let op_n = matching.iter().filter(|d| held.operator.contains(&d.key)).count();
    let held_n = matching.iter().filter(|d| held.channels.contains(&d.key) && !held.operator.contains(&d.key)).count();
    let offline_n = n - held_n - op_n;
    let devices = if n == 1 { "1 device matches".to_owned() } else { format!("{n} devices match") };
    if op_n > 0 {
        let why = if op_n == n {
            match (n, c.is_empty()) {
                (1, true) => "the only device is in use by an operator (device wall takeover)".to_owned(),
                (_, true) => format!("all {n} devices are in use by operators (device wall takeover)"),
                (1, false) => format!("{devices}{what}, in use by an operator (device wall takeover)"),
                (_, false) => format!("{devices}{what}, all in use by operators (device wall takeover)"),
            }
        } else {
            let mut parts = vec![format!("{op_n} in use by an operator (device wall takeover)")];
            if held_n > 0 {
                parts.push(format!("{held_n} held by other channels"));
            }
            if offline_n > 0 {
                parts.push(format!("{offline_n} offline (or not yet verified)"));
            }
            let subject = if c.is_empty() { format!("{n} devices") } else { format!("{devices}{what}") };
            format!("{subject}: {}", parts.join(", "))
        };
        return Err(ProtoError::new(ErrorCode::DeviceBusy, format!("{why}; {WAIT_FOR_OPERATOR}")));
    }
    // Every phone held is `device_busy`, not `device_not_found`: the phones are there and one will be free again,
    // so the caller should wait or release one — not look for a phone that does not exist.
    let (code, why) = if offline_n == 0 {
        let all = match (n, c.is_empty()) {
            (1, true) => "the only device is held by another channel".to_owned(),
            (_, true) => format!("all {n} devices are held by other channels"),
            (1, false) => format!("{devices}{what}, held by another channel"),
            (2, false) => format!("{devices}{what}, both held by other channels"),
            (_, false) => format!("{devices}{what}, all held by other channels"),
        };
        (ErrorCode::DeviceBusy, format!("{all}; {FREE_ONE}"))
    } else if held_n == 0 {
        let st = if n == 1 { "it is offline" } else { "all are offline" };
        (ErrorCode::DeviceOffline, format!("{devices}{what}, but {st} (or not yet verified)"))
    } else {
        (
            ErrorCode::DeviceBusy,
            format!(
                "{devices}{what}: {held_n} held by other channels, {offline_n} offline (or not yet verified); \
                 {FREE_ONE}"
            ),
        )
    };
    Err(ProtoError::new(code, why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn dev(serial: &str, state: DeviceState, model: &str, maker: &str, sdk: Option<u32>) -> DeviceInfo {
        DeviceInfo {
            key: DeviceKey { server: "s".into(), serial: serial.into() },
            state,
            model: model.into(),
            manufacturer: maker.into(),
            sdk,
        }
    }

    fn farm() -> Vec<DeviceInfo> {
        vec![
            dev("A", DeviceState::Online, "Pixel 7", "Google", Some(34)),
            dev("B", DeviceState::Online, "Pixel 7", "Google", Some(34)),
            dev("C", DeviceState::Online, "SM-S911B", "samsung", Some(33)),
            dev("D", DeviceState::Online, "Moto G", "motorola", Some(29)),
            dev("E", DeviceState::Unauthorized, "Android device", "", None),
        ]
    }

    fn labels() -> Labels {
        BTreeMap::from([
            ("C".into(), vec!["pool:checkout".into(), "sim:carrier-x".into()]),
            ("E".into(), vec!["pool:new".into()]),
        ])
    }

    fn cons(v: Value) -> Constraints {
        Constraints::from_input(v.as_object().unwrap()).unwrap()
    }

    fn key(s: &str) -> DeviceKey {
        DeviceKey { server: "s".into(), serial: s.into() }
    }

    fn pick(c: Value, held: &[&str]) -> Result<Choice, ProtoError> {
        let held = Held { channels: held.iter().map(|s| key(s)).collect(), ..Held::default() };
        choose(&cons(c), &farm(), |_| true, &held, &labels())
    }

    #[test]
    fn picks_a_free_device_matching_every_constraint() {
        assert_eq!(pick(json!({"model": "pixel_7"}), &[]).unwrap(), Choice::Online(key("A")));
        assert_eq!(pick(json!({"model": "Pixel 7"}), &["A"]).unwrap(), Choice::Online(key("B")));
        assert_eq!(pick(json!({"manufacturer": "Samsung"}), &[]).unwrap(), Choice::Online(key("C")));
        assert_eq!(pick(json!({"min_sdk": "30", "max_sdk": 33}), &[]).unwrap(), Choice::Online(key("C")));
        assert_eq!(pick(json!({"max_sdk": 30}), &[]).unwrap(), Choice::Online(key("D")));
        assert_eq!(pick(json!({"labels": "pool:checkout, sim:carrier-x"}), &[]).unwrap(), Choice::Online(key("C")));
        assert_eq!(pick(json!({"labels": ["pool:new"]}), &[]).unwrap(), Choice::NeedsApproval(key("E")));
        assert_eq!(pick(json!({}), &["A", "B", "C", "D"]).unwrap(), Choice::NeedsApproval(key("E")));
    }

    #[test]
    fn failures_say_why() {
        let e = pick(json!({"model": "Pixel 7"}), &["A", "B"]).unwrap_err();
        assert_eq!(e.code, ErrorCode::DeviceBusy);
        assert_eq!(e.message, format!("2 devices match model=\"Pixel 7\", both held by other channels; {FREE_ONE}"));
        let e = pick(json!({"labels": ["pool:checkout"]}), &["C"]).unwrap_err();
        assert_eq!(
            e.message,
            format!("1 device matches labels=[\"pool:checkout\"], held by another channel; {FREE_ONE}")
        );
        let e = pick(json!({"model": "Pixel 9"}), &[]).unwrap_err();
        assert_eq!(e.code, ErrorCode::DeviceNotFound);
        assert!(
            e.message.starts_with("no device matches model=\"Pixel 9\" (online: Moto G (motorola, SDK 29); "),
            "{e}"
        );
        // Unauthorized devices have no known SDK: an SDK bound never picks one.
        let e = pick(json!({"min_sdk": 35}), &[]).unwrap_err();
        assert_eq!(e.code, ErrorCode::DeviceNotFound);
        let mut offline = farm();
        offline[2].state = DeviceState::Offline;
        let e = choose(&cons(json!({"manufacturer": "samsung"})), &offline, |_| true, &Held::default(), &labels());
        assert_eq!(e.unwrap_err().code, ErrorCode::DeviceOffline);
        // The allowlist still applies: a matching device outside it is not a candidate.
        let e = choose(
            &cons(json!({"manufacturer": "samsung"})),
            &farm(),
            |k| k.serial != "C",
            &Held::default(),
            &labels(),
        );
        assert_eq!(e.unwrap_err().code, ErrorCode::DeviceNotFound);
    }

    #[test]
    fn a_phone_an_operator_took_over_is_not_picked() {
        let held = |ch: &[&str], op: &[&str]| Held {
            channels: ch.iter().map(|s| key(s)).collect(),
            operator: op.iter().map(|s| key(s)).collect(),
        };
        let pick = |c: Value, h: Held| choose(&cons(c), &farm(), |_| true, &h, &labels());
        assert_eq!(pick(json!({"model": "Pixel 7"}), held(&[], &["A"])).unwrap(), Choice::Online(key("B")));
        let e = pick(json!({"model": "Pixel 7"}), held(&["B"], &["A"])).unwrap_err();
        assert_eq!(e.code, ErrorCode::DeviceBusy);
        assert_eq!(
            e.message,
            format!(
                "2 devices match model=\"Pixel 7\": 1 in use by an operator (device wall takeover), 1 held by other \
                 channels; {WAIT_FOR_OPERATOR}"
            )
        );
        let e = pick(json!({"manufacturer": "samsung"}), held(&["C"], &["C"])).unwrap_err();
        assert_eq!(
            e.message,
            format!("1 device matches manufacturer=\"samsung\", in use by an operator (device wall takeover); {WAIT_FOR_OPERATOR}")
        );
        let e = pick(json!({}), held(&[], &["A", "B", "C", "D", "E"])).unwrap_err();
        assert_eq!(
            e.message,
            format!("all 5 devices are in use by operators (device wall takeover); {WAIT_FOR_OPERATOR}")
        );
    }

    #[test]
    fn bad_input_is_refused_with_the_field_named() {
        let err = |v: Value| Constraints::from_input(v.as_object().unwrap()).unwrap_err().message;
        assert!(err(json!({"min_sdk": "thirty"})).starts_with("`min_sdk` must be an Android API level"));
        assert!(err(json!({"max_sdk": 0})).contains("max_sdk"));
        assert_eq!(err(json!({"min_sdk": 34, "max_sdk": 30})), "min_sdk (34) is above max_sdk (30)");
        assert!(err(json!({"labels": ["a b"]})).starts_with("label \"a b\" is not valid"));
        assert!(err(json!({"labels": 5})).contains("labels"));
        assert!(err(json!({"model": 7})).contains("`model`"));
        assert!(cons(json!({"model": "", "labels": "", "min_sdk": ""})).is_empty(), "empty form fields are absent");
    }
}
