//! What the operator configures for the recovery ladder (`--recover-*`) and where its steps are recorded: plain
//! data the backend holds (`adb.rs`) and the ladder reads (`recovery.rs`), so the one need not import the other.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::key::DeviceKey;

/// Commands in a row ending in `device_timeout` that start the ladder.
pub const TIMEOUTS_IN_A_ROW: u32 = 3;
/// How long a phone may stay `offline` before the ladder starts, by default (a replug or a reboot takes well under
/// this).
pub const OFFLINE_AFTER: Duration = Duration::from_secs(60);
/// Bounds of `--recover-offline-after`: below 2 s a phone's own reconnect (the adb server lists it `offline` for a
/// moment while it re-handshakes) would be cut by the ladder; above an hour the phone is as good as forgotten.
pub const OFFLINE_AFTER_MIN: Duration = Duration::from_secs(2);
pub const OFFLINE_AFTER_MAX: Duration = Duration::from_secs(3600);
/// A serial we substitute into the operator's argv: what adb serials look like, never an option.
const MAX_SERIAL: usize = 128;

/// Where each step is recorded (`run.rs` wires it to the audit log): device, step (`device.recover.reconnect`,
/// `device.recover.command`, `device.recover.unhealthy`, `device.recover.recovered`), details, result.
pub type AuditSink = Arc<dyn Fn(&DeviceKey, &'static str, &Map<String, Value>, &str) + Send + Sync>;

/// The operator's part of the ladder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// `--recover-command`, split into argv once at start-up; `{serial}` in any word is replaced.
    pub command: Option<Vec<String>>,
    pub command_timeout: Duration,
    pub command_every: Duration,
    /// How long a phone gets to answer a probe after each step (`--recover-wait`; a power-cycled phone
    /// re-enumerates on USB within seconds).
    pub wait: Duration,
    /// How long a phone may stay `offline` before the ladder starts (`--recover-offline-after`).
    pub offline_after: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            command: None,
            command_timeout: Duration::from_secs(60),
            command_every: Duration::from_secs(600),
            wait: Duration::from_secs(30),
            offline_after: OFFLINE_AFTER,
        }
    }
}

/// Splits a command line into argv the way a shell would for plain words and quotes ('…', "…"), without running
/// any shell: no variables, globs, pipes or redirections — a word with one of `$`…`|` is refused rather than
/// silently passed literally. Errors name the problem.
pub fn split_command(line: &str) -> Result<Vec<String>, String> {
    let mut argv = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some(q) if q == c => break,
                        Some(ch) => word.push(ch),
                        None => return Err(format!("unterminated {c} quote")),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    argv.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '$' | '`' | '|' | ';' | '&' | '<' | '>' | '*' | '?' | '\\' | '(' | ')' => {
                return Err(format!(
                    "{c:?} would need a shell; the command runs without one (write a script and name it instead)"
                ))
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        argv.push(word);
    }
    if argv.is_empty() {
        return Err("the command is empty".into());
    }
    Ok(argv)
}

/// Whether `s` may be substituted for `{serial}` in the operator's argv.
pub fn serial_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_SERIAL
        && !s.starts_with('-')
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b':' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_split_without_a_shell() {
        assert_eq!(
            split_command("uhubctl -a cycle -p {serial}").unwrap(),
            ["uhubctl", "-a", "cycle", "-p", "{serial}"]
        );
        assert_eq!(split_command(" '/opt/my tools/cycle' \"a b\" ''").unwrap(), ["/opt/my tools/cycle", "a b", ""]);
        for bad in ["", "   ", "a; rm -rf /", "a | b", "a $(x)", "a `x`", "a > f", "'open"] {
            assert!(split_command(bad).is_err(), "{bad:?}");
        }
        assert!(serial_ok("R58N123ABC") && serial_ok("127.0.0.1:5555") && serial_ok("emulator-5554"));
        assert!(!serial_ok("-rf") && !serial_ok("a b") && !serial_ok("x/../y") && !serial_ok(&"a".repeat(200)));
    }
}
