//! Operator policy (`--policy FILE`, JSON): which devices may be bound, which tools exist, and the opt-in risky
//! tools with their constraints. Risky tools are absent from the card unless enabled here — the protocol forbids
//! declaring a tool that would fail — and `android_shell` still refuses every command outside its allowlist.
//!
//! ```json
//! {
//!   "allow_serials": ["R58N123ABC"],
//!   "disabled_tools": ["android_open_url"],
//!   "enabled_risky_tools": ["android_app_uninstall", "android_app_clear_data", "android_shell"],
//!   "shell_allow_prefixes": ["dumpsys battery", "getprop ", "pm list features"],
//!   "labels": {"R58N123ABC": ["pool:checkout", "sim:carrier-x"]},
//!   "health": {"hot_celsius": 45, "battery_low_percent": 15, "storage_low_mb": 500},
//!   "lease_conditions": {"animations": "off", "stay_awake_while_plugged": true, "release": {"home": true}},
//!   "web_content": false
//! }
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// Operator labels: serial → labels (`labels` in the policy file), required by binds (`channels::matching`).
pub type Labels = BTreeMap<String, Vec<String>>;

/// The longest label.
pub const MAX_LABEL_LEN: usize = 64;

/// A label is printable ASCII without spaces or commas (`pool:checkout`, `sim:carrier-x`), ≤ 64 chars.
pub fn valid_label(l: &str) -> bool {
    !l.is_empty() && l.len() <= MAX_LABEL_LEN && l.bytes().all(|b| b.is_ascii_graphic() && b != b',')
}

/// Tools that exist only when the operator enables them.
pub const RISKY_TOOLS: &[&str] = &["android_app_uninstall", "android_app_clear_data", "android_shell"];

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    #[serde(default)]
    pub allow_serials: Vec<String>,
    #[serde(default)]
    pub disabled_tools: Vec<String>,
    #[serde(default)]
    pub enabled_risky_tools: Vec<String>,
    /// Commands `android_shell` accepts, matched against the whole command word by word (see
    /// [`Policy::shell_allows`]): `<arg>` stands for one plain word, and an entry ending in a space or in `<args>`
    /// admits any further plain words. (The historical name stays so existing policy files keep loading.)
    #[serde(default)]
    pub shell_allow_prefixes: Vec<String>,
    /// System packages `android_app_clear_data` may clear anyway (by default `android`, `com.android.*` and every
    /// package `pm list packages -s` lists are refused).
    #[serde(default)]
    pub clear_data_allow_system: Vec<String>,
    /// Whose notifications `android_notifications` returns (`None`: every app's; `[]`: nobody's). The others are
    /// left out before anything reaches the agent, and counted as `withheld`.
    #[serde(default)]
    pub notification_packages: Option<Vec<String>>,
    /// Whose runtime permissions `android_permission` may list, grant and revoke (`None`: every app's; `[]`:
    /// nobody's). Any other package is refused before the phone is asked.
    #[serde(default)]
    pub permission_packages: Option<Vec<String>>,
    /// Upper bound on every tool's deadline (`--tool-deadline-max`; not a policy-file key). `None`: each tool's own.
    #[serde(skip)]
    pub tool_deadline_max: Option<std::time::Duration>,
    /// Input tools wake a sleeping phone before acting (default true); false: they fail with `device_locked`
    /// and send nothing.
    #[serde(default)]
    pub auto_wake: Option<bool>,
    /// Input tools read the screen state first (default true): wake a sleeping phone, refuse the keyguard. false
    /// saves that round trip (one per action, cached 1 s) on phones that never sleep or lock (kiosk docks).
    #[serde(default)]
    pub screen_checks: Option<bool>,
    /// `android_observe` reads the page of a Chrome tab or a debuggable WebView through the DevTools protocol
    /// (default true) and lists its text, links, buttons and inputs (`source: "web"`). false: pages stay one
    /// WebView node (`web: {state: "off"}`), and no DevTools socket of a phone is ever opened.
    #[serde(default)]
    pub web_content: Option<bool>,
    /// Operator labels per serial, which a bind can require (`labels` of the `adb_device` flow).
    #[serde(default)]
    pub labels: Labels,
    /// Warning thresholds of phone health (`{"hot_celsius": 45, "battery_low_percent": 15, "storage_low_mb":
    /// 500}`, each optional).
    #[serde(default)]
    pub health: crate::device::health::Thresholds,
    /// Settings every lease runs under and what a release does (`device::conditions`): `{"animations": "off",
    /// "stay_awake_while_plugged": true, "screen_timeout_ms": 600000, "font_scale": 1.0, "http_proxy":
    /// "10.0.0.2:3128", "dark_mode": true, "agent_may_set": ["font_scale", "dark_mode"], "release": {"stop_apps":
    /// ["com.example.shop"], "clear_apps": ["com.example.shop"], "home": true, "restore_keyboard": true}}`, each
    /// optional.
    #[serde(default)]
    pub lease_conditions: crate::device::lease::Conditions,
}

impl Policy {
    pub fn load(path: &Path) -> Result<Policy, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the policy file {}: {e}", path.display()))?;
        let p: Policy =
            serde_json::from_str(&text).map_err(|e| format!("the policy file {} is invalid: {e}", path.display()))?;
        p.validate().map_err(|e| format!("the policy file {}: {e}", path.display()))?;
        Ok(p)
    }

    /// Checks names against the tools this binary knows (`known` = every tool id, risky ones included).
    pub fn check_tool_names(&self, known: &[&str]) -> Result<(), String> {
        for t in &self.disabled_tools {
            if !known.contains(&t.as_str()) {
                return Err(format!("disabled_tools names an unknown tool {t:?}"));
            }
        }
        Ok(())
    }

    fn validate(&self) -> Result<(), String> {
        for t in &self.enabled_risky_tools {
            if !RISKY_TOOLS.contains(&t.as_str()) {
                return Err(format!(
                    "enabled_risky_tools: {t:?} is not a risky tool (those are {})",
                    RISKY_TOOLS.join(", ")
                ));
            }
        }
        let shell = self.enabled_risky_tools.iter().any(|t| t == "android_shell");
        if shell && self.shell_allow_prefixes.is_empty() {
            return Err(
                "android_shell is enabled but shell_allow_prefixes is empty: list the commands it may run".into()
            );
        }
        let package_like = |p: &String| {
            !p.is_empty() && p.len() <= 255 && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        };
        if let Some(p) = self.clear_data_allow_system.iter().find(|p| !package_like(p)) {
            return Err(format!("clear_data_allow_system entry {p:?} is not a package name"));
        }
        if let Some(p) = self.notification_packages.iter().flatten().find(|p| !package_like(p)) {
            return Err(format!("notification_packages entry {p:?} is not a package name"));
        }
        if let Some(p) = self.permission_packages.iter().flatten().find(|p| !package_like(p)) {
            return Err(format!("permission_packages entry {p:?} is not a package name"));
        }
        if let Some(p) = self.shell_allow_prefixes.iter().find(|p| !valid_pattern(p)) {
            return Err(format!(
                "shell_allow_prefixes entry {p:?} must be plain words, `<arg>` for one argument word, and optionally \
                 a final `<args>` (or a trailing space) for any further argument words"
            ));
        }
        self.health.validate()?;
        self.lease_conditions.validate()?;
        for (serial, labels) in &self.labels {
            if serial.is_empty() || serial.len() > 128 || serial.bytes().any(|b| !b.is_ascii_graphic()) {
                return Err(format!("labels: {serial:?} is not a device serial"));
            }
            if let Some(l) = labels.iter().find(|l| !valid_label(l)) {
                return Err(format!(
                    "labels of {serial}: {l:?} is not a valid label (printable ASCII without spaces or commas, at \
                     most {} characters)",
                    MAX_LABEL_LEN
                ));
            }
        }
        Ok(())
    }

    pub fn auto_wake(&self) -> bool {
        self.auto_wake.unwrap_or(true)
    }

    pub fn web_content(&self) -> bool {
        self.web_content.unwrap_or(true)
    }

    pub fn screen_checks(&self) -> bool {
        self.screen_checks.unwrap_or(true)
    }

    pub fn tool_enabled(&self, id: &str) -> bool {
        !self.disabled_tools.iter().any(|t| t == id)
            && (!RISKY_TOOLS.contains(&id) || self.enabled_risky_tools.iter().any(|t| t == id))
    }

    /// `android_shell` gate: allowlisted prefix and no shell syntax that could chain a second command.
    pub fn shell_allows(&self, command: &str) -> Result<(), String> {
        let cmd = command.trim();
        if has_shell_syntax(cmd) {
            return Err(
                "the command contains shell syntax (any of ; & | $ ` < > ( ) \\ \" ' * ? { } [ ] ~ # ! or a control \
                 character), which android_shell never runs"
                    .into(),
            );
        }
        if self.shell_allow_prefixes.iter().any(|p| pattern_matches(p, cmd)) {
            Ok(())
        } else {
            Err(format!(
                "the operator's policy does not allow this command (allowed commands: {})",
                self.shell_allow_prefixes.iter().map(|p| p.trim()).collect::<Vec<_>>().join(" | ")
            ))
        }
    }
}

/// An entry is plain words, `<arg>` placeholders and at most a final `<args>`.
fn valid_pattern(p: &str) -> bool {
    let words: Vec<&str> = p.split(' ').filter(|w| !w.is_empty()).collect();
    let Some(first) = words.first() else { return false };
    if first.starts_with('<') {
        return false; // the command itself is never a placeholder
    }
    words
        .iter()
        .enumerate()
        .all(|(i, w)| *w == "<arg>" || (*w == "<args>" && i == words.len() - 1) || !has_shell_syntax(w))
        && !p.contains(['\t', '\n', '\r'])
}

/// Whole-command match: every pattern word equals the command's word at its place (`<arg>` = any one word), and
/// the command has no further words unless the pattern is open-ended (final `<args>` or a trailing space).
/// `dumpsys battery` therefore admits exactly `dumpsys battery`, not `dumpsys battery set level 1`.
fn pattern_matches(pattern: &str, cmd: &str) -> bool {
    let mut want: Vec<&str> = pattern.split(' ').filter(|w| !w.is_empty()).collect();
    let mut open = pattern.ends_with(' ');
    if want.last() == Some(&"<args>") {
        want.pop();
        open = true;
    }
    let got: Vec<&str> = cmd.split(' ').filter(|w| !w.is_empty()).collect();
    if got.len() < want.len() || (!open && got.len() != want.len()) {
        return false;
    }
    want.iter().zip(&got).all(|(w, g)| *w == "<arg>" || w == g)
}

/// Anything that makes `sh` do more than run one simple command with plain words.
fn has_shell_syntax(s: &str) -> bool {
    s.chars().any(|c| ";&|$`<>()\\\"'\n\r*?{}[]~#!".contains(c) || c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(json: &str) -> Result<Policy, String> {
        let p: Policy = serde_json::from_str(json).map_err(|e| e.to_string())?;
        p.validate()?;
        Ok(p)
    }

    #[test]
    fn default_has_no_risky_tools() {
        let p = Policy::default();
        assert!(p.tool_enabled("android_tap"));
        for t in RISKY_TOOLS {
            assert!(!p.tool_enabled(t), "{t}");
        }
    }

    #[test]
    fn validation_is_specific() {
        assert!(policy(r#"{"nope": 1}"#).unwrap_err().contains("unknown field"));
        assert!(policy(r#"{"enabled_risky_tools": ["android_tap"]}"#).unwrap_err().contains("not a risky tool"));
        assert!(policy(r#"{"enabled_risky_tools": ["android_shell"]}"#)
            .unwrap_err()
            .contains("shell_allow_prefixes is empty"));
        assert!(policy(r#"{"enabled_risky_tools": ["android_shell"], "shell_allow_prefixes": ["ls; rm"]}"#).is_err());
        let p = policy(r#"{"disabled_tools": ["android_nope"]}"#).unwrap();
        assert!(p.check_tool_names(&["android_tap"]).unwrap_err().contains("android_nope"));
    }

    #[test]
    fn shell_allowlist_refuses_everything_else() {
        let p = policy(
            r#"{"enabled_risky_tools": ["android_shell"], "shell_allow_prefixes": ["dumpsys battery", "getprop "]}"#,
        )
        .unwrap();
        assert!(p.tool_enabled("android_shell"));
        assert!(p.shell_allows("dumpsys battery").is_ok());
        assert!(p.shell_allows("dumpsys  battery").is_ok(), "spacing does not matter");
        assert!(p.shell_allows("getprop ro.product.model").is_ok());
        for bad in [
            "reboot",
            "getprop x; reboot",
            "getprop x && reboot",
            "getprop $(reboot)",
            "getprop `reboot`",
            "getprop x | sh",
            "getprop x > /sdcard/y",
            "getprop x\nreboot",
            "dumpsys batteryx; id",
            "dumpsys batterystats --reset",
            "getprop 'a'",
            // Whole commands, not prefixes: the read-only command does not admit its state-changing forms.
            "dumpsys battery set level 1",
            "dumpsys battery unplug",
            "dumpsys battery reset",
            "dumpsys battery --checkin",
        ] {
            assert!(p.shell_allows(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn argument_patterns() {
        let p = policy(
            r#"{"enabled_risky_tools": ["android_shell"],
                "shell_allow_prefixes": ["settings get <arg> <arg>", "pm list packages <args>", "getprop"]}"#,
        )
        .unwrap();
        assert!(p.shell_allows("settings get global airplane_mode_on").is_ok());
        assert!(p.shell_allows("settings get global").is_err(), "one word short");
        assert!(p.shell_allows("settings get global a b").is_err(), "one word too many");
        assert!(p.shell_allows("settings put global a 1").is_err());
        assert!(p.shell_allows("pm list packages").is_ok());
        assert!(p.shell_allows("pm list packages -3 -f").is_ok());
        assert!(p.shell_allows("getprop").is_ok());
        assert!(p.shell_allows("getprop ro.x").is_err(), "no trailing space, no arguments");
        for bad in ["<arg> x", "a <args> b", "a $b", "a\tb"] {
            let json = serde_json::json!({"enabled_risky_tools": ["android_shell"], "shell_allow_prefixes": [bad]});
            assert!(policy(&json.to_string()).is_err(), "{bad}");
        }
    }
}
