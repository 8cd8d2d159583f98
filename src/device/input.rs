//! Inputs as device operations: an input tool's tap, swipe, long press or key goes through the phone's resident
//! helper when it can (`helper.rs`: one line on an open stream) and as the `input` command when it cannot. Above
//! the backend core (`adb.rs`) and the helper's host side, which know nothing of each other's callers.

use std::time::Duration;

use super::adb::AdbBackend;
use super::backend::Backend;
use super::helper::{keycode, timeout_for, LONG_KEY_HOLD_MS};
use super::key::DeviceKey;
use crate::protocol::errors::ProtoError;

/// An input an input tool sends: through the helper when it can, else as today's `input` command.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    Tap {
        x: i64,
        y: i64,
    },
    Swipe {
        x1: i64,
        y1: i64,
        x2: i64,
        y2: i64,
        ms: u64,
    },
    /// A long press (a swipe that does not move, for `input`).
    Press {
        x: i64,
        y: i64,
        ms: u64,
    },
    /// One of `android_key`'s keys (`HOME`, `BACK`, …), long-pressed or not, pressed `times` times (1–50 through
    /// the helper; the shell path names the key that often in one `input keyevent`).
    Key {
        name: &'a str,
        long: bool,
        times: u32,
    },
}

impl Input<'_> {
    /// The helper's verb, its arguments and how long the verb itself holds (`None`: no helper verb for it).
    fn request(&self) -> Option<(&'static str, String, Duration)> {
        let ms = Duration::from_millis;
        Some(match *self {
            Input::Tap { x, y } => ("tap", format!("{x} {y}"), Duration::ZERO),
            Input::Swipe { x1, y1, x2, y2, ms: t } => ("swipe", format!("{x1} {y1} {x2} {y2} {t}"), ms(t)),
            Input::Press { x, y, ms: t } => ("press", format!("{x} {y} {t}"), ms(t)),
            Input::Key { name, long, times } => {
                let hold = if long { LONG_KEY_HOLD_MS } else { 0 };
                // The helper's bound (device-profile/phone-helper.md §4); more goes the shell's way.
                if !(1..=50).contains(&times) {
                    return None;
                }
                ("key", format!("{} {times} {hold}", keycode(name)?), ms(hold.saturating_mul(u64::from(times))))
            }
        })
    }

    /// Today's shell command for it.
    pub fn shell(&self) -> String {
        match *self {
            Input::Tap { x, y } => format!("input tap {x} {y}"),
            Input::Swipe { x1, y1, x2, y2, ms } => format!("input swipe {x1} {y1} {x2} {y2} {ms}"),
            // A swipe that does not move is how `input` expresses a long press on every Android version.
            Input::Press { x, y, ms } => format!("input swipe {x} {y} {x} {y} {ms}"),
            Input::Key { name, long, times } => {
                let keys = format!(" KEYCODE_{name}").repeat(times.max(1) as usize);
                format!("input keyevent{}{keys}", if long { " --longpress" } else { "" })
            }
        }
    }
}

/// How an input reached the phone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Helper,
    Shell,
}

impl AdbBackend {
    /// One request to `key`'s helper as a device operation (`ordered` for side effects, within `deadline`, the
    /// helper started first when needed): its payload, or `None` when the caller must use the shell path.
    /// `held` is how long the verb itself takes (a gesture's duration).
    pub async fn helper(
        &self,
        key: &DeviceKey,
        ordered: bool,
        deadline: Duration,
        verb: &str,
        args: &str,
        held: Duration,
    ) -> Result<Option<String>, ProtoError> {
        if !self.helpers().would_use(key, verb, args) {
            return Ok(None);
        }
        // A phone whose last command timed out may be stuck: no helper start spends this call's deadline on it
        // (the shell path's own timeout then counts toward the recovery ladder); a running helper is still asked.
        if !self.helpers().running(key) && self.health_book().timeouts_in_a_row(key) > 0 {
            return Ok(None);
        }
        let sdk = Backend::info(self, key).and_then(|i| i.sdk);
        let timeout = timeout_for(verb, held);
        let r = self
            .op(key, ordered, deadline, |d| async move { self.helpers().call(key, &d, sdk, verb, args, timeout).await })
            .await;
        match r {
            // The phone left the helper's start-up probe unanswered: `op` counted that toward the recovery ladder as
            // the device timeout it is (issue 48 item 5), and the helper is not started again on this phone until it
            // reconnects. The call goes on through the shell path, which answers or times out and counts again.
            Err(e) if e.details.as_ref().is_some_and(|d| d[super::helper::START_UNANSWERED] == true) => Ok(None),
            r => r,
        }
    }

    /// Sends an input: through the helper when it can, else the `input` command (a side effect, ordered).
    pub async fn input(&self, key: &DeviceKey, input: Input<'_>, deadline: Duration) -> Result<Via, ProtoError> {
        if let Some((verb, args, held)) = input.request() {
            if self.helper(key, true, deadline, verb, &args, held).await?.is_some() {
                return Ok(Via::Helper);
            }
        }
        self.shell_ok(key, &input.shell(), true, deadline).await?;
        Ok(Via::Shell)
    }
}
