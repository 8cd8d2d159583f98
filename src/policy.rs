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
//!   "labels": {"R58N123ABC": ["pool:checkout", "sim:carrier-x"]}
//! }
//! ```

use std::path::Path;

use serde::Deserialize;

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
    /// Commands `android_shell` accepts: the command must start with one of these (after trimming).
    #[serde(default)]
    pub shell_allow_prefixes: Vec<String>,
    /// Operator labels per serial, which a bind can require (`labels` of the `adb_device` flow).
    #[serde(default)]
    pub labels: std::collections::BTreeMap<String, Vec<String>>,
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
        if let Some(p) = self.shell_allow_prefixes.iter().find(|p| p.trim().is_empty() || has_shell_syntax(p)) {
            return Err(format!("shell_allow_prefixes entry {p:?} must be a plain command prefix"));
        }
        for (serial, labels) in &self.labels {
            if serial.is_empty() || serial.len() > 128 || serial.bytes().any(|b| !b.is_ascii_graphic()) {
                return Err(format!("labels: {serial:?} is not a device serial"));
            }
            if let Some(l) = labels.iter().find(|l| !crate::channels::matching::valid_label(l)) {
                return Err(format!(
                    "labels of {serial}: {l:?} is not a valid label (printable ASCII without spaces or commas, at \
                     most {} characters)",
                    crate::channels::matching::MAX_LABEL_LEN
                ));
            }
        }
        Ok(())
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
        // A prefix matches whole words: `dumpsys battery` admits `dumpsys battery --checkin`, not
        // `dumpsys batterystats --reset` (a prefix ending in a space already marks its word boundary).
        let matches = |p: &String| {
            cmd == p.trim()
                || cmd.strip_prefix(p.as_str()).is_some_and(|rest| p.ends_with(' ') || rest.starts_with([' ', '\t']))
        };
        if self.shell_allow_prefixes.iter().any(matches) {
            Ok(())
        } else {
            Err(format!(
                "the operator's policy does not allow this command (allowed prefixes: {})",
                self.shell_allow_prefixes.join(" | ")
            ))
        }
    }
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
        assert!(p.shell_allows("dumpsys battery --checkin").is_ok());
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
        ] {
            assert!(p.shell_allows(bad).is_err(), "{bad}");
        }
    }
}
