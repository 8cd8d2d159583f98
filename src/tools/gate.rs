//! The screen-state gate every input tool passes first ([`ready_for_input`]: wake a sleeping phone, refuse the
//! keyguard), under the operator's policy ([`InputGate`]). Apart from `power.rs` (android_wake, android_unlock) so
//! the input and gesture tools share it without naming another tool file.
//!
//! The state comes from [`AdbBackend::screen_state`] (one round trip, cached ≤ 1 s, forgotten after each side
//! effect).

use std::sync::Arc;
use std::time::Duration;

use super::context::Ctx;
use crate::device::adb::AdbBackend;
use crate::device::power::ScreenState;
use crate::device::{Backend, DeviceKey};
use crate::policy::Policy;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// How input tools treat the screen state (operator policy `screen_checks`, `auto_wake`).
#[derive(Clone, Copy, Debug)]
pub struct InputGate {
    pub checks: bool,
    pub auto_wake: bool,
    /// The operator's policy lets tools read web pages (`android_open_url`'s report of what loaded).
    pub web_content: bool,
}

impl InputGate {
    pub fn of(policy: &Policy) -> InputGate {
        InputGate { checks: policy.screen_checks(), auto_wake: policy.auto_wake(), web_content: policy.web_content() }
    }
}

/// What [`ready_for_input`] found: whether it woke the phone, and the state the input is sent in.
#[derive(Clone, Copy, Debug)]
pub struct Ready {
    pub woke: bool,
    /// `None` when the operator's policy turns the screen checks off.
    state: Option<ScreenState>,
}

impl Ready {
    /// The input was sent: an awake, unlocked phone stays so for a while ([`AdbBackend::kept_awake_by_input`]), so
    /// the next input needs no state read. Call it after the tool's last input, never for the power keys.
    pub fn sent(&self, c: &Ctx) {
        if let Some(st) = self.state {
            c.adb.kept_awake_by_input(&c.device, st);
        }
    }
}

/// Makes the phone ready for input before a tool sends any: a sleeping phone is woken (policy `auto_wake`), a
/// showing keyguard refuses with `device_locked`. An unknown state (a phone that prints neither) lets the input
/// through. The state comes from what is known and still trusted (a read of the last second, or the connector's
/// own input of the last few seconds: [`crate::device::adb::INPUT_KEEPS_AWAKE`]), else from one round trip.
pub async fn ready_for_input(c: &Ctx, gate: InputGate) -> Result<Ready, ProtoError> {
    if !gate.checks {
        return Ok(Ready { woke: false, state: None });
    }
    let mut st = c.adb.screen_state(&c.device).await?;
    let mut woke = false;
    if st.asleep() {
        if !gate.auto_wake {
            return Err(ProtoError::new(
                ErrorCode::DeviceLocked,
                "the screen is off and the operator's policy turns auto_wake off: nothing was sent. Wake the phone \
                 with android_wake (or android_unlock), then retry",
            ));
        }
        wake(&c.adb, &c.device, c.spec.deadline).await?;
        woke = true;
        st = c.adb.screen_state(&c.device).await?;
    }
    if st.is_locked() {
        return Err(locked(st, woke));
    }
    Ok(Ready { woke, state: Some(st) })
}

fn locked(st: ScreenState, woke: bool) -> ProtoError {
    let woke = if woke { " (the screen was off; it was woken)" } else { "" };
    let what = if st.secure == Some(true) {
        "the phone reports a PIN, pattern or password lock, which the connector never types: ask a person to \
         unlock the phone (android_unlock can only open a swipe lock)"
    } else {
        "call android_unlock (it opens a swipe lock; a PIN, pattern or password lock needs a person)"
    };
    ProtoError::new(
        ErrorCode::DeviceLocked,
        format!("the lock screen (keyguard) is showing{woke}: nothing was sent; {what}, then observe again"),
    )
}

/// Sends the wake-up key: `KEYCODE_WAKEUP` (API 20+) only ever turns the screen on; older phones only have the
/// toggling `KEYCODE_POWER`, sent only because the state said the screen is off.
pub(super) async fn wake(adb: &Arc<AdbBackend>, key: &DeviceKey, deadline: Duration) -> Result<(), ProtoError> {
    let sdk = adb.info(key).and_then(|i| i.sdk);
    let code = if sdk.is_some_and(|s| s < 20) { "KEYCODE_POWER" } else { "KEYCODE_WAKEUP" };
    adb.shell_ok(key, &format!("input keyevent {code}"), true, deadline).await?;
    Ok(())
}
