//! The screen state as the tools see it: the gate every input tool passes first ([`ready_for_input`]: wake a
//! sleeping phone, refuse the keyguard), and the tools `android_wake` and `android_unlock`.
//!
//! The state comes from [`AdbBackend::screen_state`] (one round trip, cached ≤ 1 s, forgotten after each side
//! effect). The connector never stores, asks for or types a PIN, pattern or password: a secure keyguard is
//! reported (`secure_lock`) for a person to open.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::device::{tool, Ctx};
use super::{Tool, ToolSpec};
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
}

impl InputGate {
    pub fn of(policy: &Policy) -> InputGate {
        InputGate { checks: policy.screen_checks(), auto_wake: policy.auto_wake() }
    }
}

/// How long `android_unlock` waits for the keyguard to go after each attempt (the dismiss animation).
const SETTLE: Duration = Duration::from_millis(1500);

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
async fn wake(adb: &Arc<AdbBackend>, key: &DeviceKey, deadline: Duration) -> Result<(), ProtoError> {
    let sdk = adb.info(key).and_then(|i| i.sdk);
    let code = if sdk.is_some_and(|s| s < 20) { "KEYCODE_POWER" } else { "KEYCODE_WAKEUP" };
    adb.shell_ok(key, &format!("input keyevent {code}"), true, deadline).await?;
    Ok(())
}

/// Reads the state afresh until `done` holds or [`SETTLE`] passed; returns the last state read.
async fn settle(c: &Ctx, done: impl Fn(&ScreenState) -> bool) -> Result<ScreenState, ProtoError> {
    let started = Instant::now();
    loop {
        c.adb.forget_screen_state(&c.device);
        let st = c.adb.screen_state(&c.device).await?;
        if done(&st) || started.elapsed() >= SETTLE {
            return Ok(st);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn secure_lock(detail: &str) -> ProtoError {
    ProtoError::new(
        ErrorCode::SecureLock,
        format!(
            "the phone is locked with a PIN, pattern or password ({detail}); the connector never stores or types \
             credentials: ask a person to unlock it (or the operator to set the screen lock to None or Swipe)"
        ),
    )
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolSpec {
                id: "android_wake",
                title: "Wake the screen",
                description: "Turn the screen on. Input tools do it themselves unless the operator turned \
                              auto_wake off; a lock screen needs android_unlock.",
                input: super::args::schema::<super::args::NoArgs>(),
                output: json!({"type": "object", "properties": {
                    "woke": {"type": "boolean", "description": "It was off and was woken"},
                    "screen_on": {"type": ["boolean", "null"]}, "locked": {"type": ["boolean", "null"]}}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(10),
            },
            adb,
            |c| async move {
                // An explicit request reads afresh: the phone may have slept since the last (cached) read.
                c.adb.forget_screen_state(&c.device);
                let st = c.adb.screen_state(&c.device).await?;
                if !st.asleep() {
                    return Ok(json!({"woke": false, "screen_on": st.screen_on, "locked": st.locked}));
                }
                wake(&c.adb, &c.device, c.spec.deadline).await?;
                let st = settle(&c, |s| !s.asleep()).await?;
                Ok(json!({"woke": true, "screen_on": st.screen_on, "locked": st.locked}))
            },
        ),
        tool(
            ToolSpec {
                id: "android_unlock",
                title: "Open the lock screen",
                description: "Wake and dismiss a lock screen that has no credential; a PIN, pattern or \
                              password fails with secure_lock (a person must unlock).",
                input: super::args::schema::<super::args::NoArgs>(),
                output: json!({"type": "object", "properties": {
                    "unlocked": {"type": "boolean"},
                    "woke": {"type": "boolean"},
                    "method": {"type": "string", "enum": ["not_locked", "dismiss_keyguard", "swipe_up"]}}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            |c| async move { unlock(c).await },
        ),
    ]
}

async fn unlock(c: Ctx) -> Result<Value, ProtoError> {
    let d = c.spec.deadline;
    c.adb.forget_screen_state(&c.device);
    let mut st = c.adb.screen_state(&c.device).await?;
    let mut woke = false;
    if st.asleep() {
        wake(&c.adb, &c.device, d).await?;
        woke = true;
        st = settle(&c, |s| !s.asleep()).await?;
    }
    if !st.is_locked() {
        return Ok(json!({"unlocked": true, "woke": woke, "method": "not_locked"}));
    }
    // The delegate's `secure=` is not trusted to decide: AOSP initialises it to true until SystemUI reports, so a
    // stale `true` would refuse a swipe lock. Trying costs one harmless dismiss (a secure keyguard shows its
    // bouncer) and one swipe.
    c.adb.shell_ok(&c.device, "wm dismiss-keyguard", true, d).await?;
    if !settle(&c, |s| !s.is_locked()).await?.is_locked() {
        return Ok(json!({"unlocked": true, "woke": woke, "method": "dismiss_keyguard"}));
    }
    // Some builds ignore dismiss-keyguard for the swipe lock: swipe up the middle of the screen, as a thumb does.
    let (w, h) = c.adb.display_size(&c.device).await?;
    let (x, y1, y2) = (w / 2, h * 4 / 5, h / 5);
    c.adb.shell_ok(&c.device, &format!("input swipe {x} {y1} {x} {y2} 300"), true, d).await?;
    let st = settle(&c, |s| !s.is_locked()).await?;
    if !st.is_locked() {
        return Ok(json!({"unlocked": true, "woke": woke, "method": "swipe_up"}));
    }
    if st.asleep() {
        // Not a credential problem: the screen went (or stayed) off meanwhile, and a dark keyguard takes nothing.
        return Err(ProtoError::new(
            ErrorCode::DeviceLocked,
            "the screen is off again and the lock screen is still showing; call android_unlock again",
        ));
    }
    Err(secure_lock("the lock screen stayed after wm dismiss-keyguard and a swipe up"))
}
