//! The screen state's own tools: `android_wake`, `android_unlock` and `android_lock` (the gate every input tool
//! passes first is `gate.rs`).
//!
//! The state comes from [`AdbBackend::screen_state`] (one round trip, cached ≤ 1 s, forgotten after each side
//! effect). The connector never stores, asks for or types a PIN, pattern or password: a secure keyguard is
//! reported (`secure_lock`) for a person to open.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::context::Ctx;
use super::device::tool;
use super::gate::wake;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::power::ScreenState;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// How long `android_unlock` waits for the keyguard to go after each attempt (the dismiss animation).
const SETTLE: Duration = Duration::from_millis(1500);

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
        tool(
            ToolSpec {
                id: "android_lock",
                title: "Lock the phone",
                description: "Turn the screen off (KEYCODE_SLEEP); a phone with a screen lock then shows it.",
                input: super::args::schema::<super::args::NoArgs>(),
                output: json!({"type": "object", "properties": {
                    "screen_on": {"type": ["boolean", "null"]}, "locked": {"type": ["boolean", "null"]},
                    "was_on": {"type": "boolean"}, "note": {"type": "string"}}}),
                side_effect: true,
                // Nothing to wait for on a screen going dark: the body reads the state until it is off and locked.
                settles: false,
                deadline: Duration::from_secs(10),
            },
            adb,
            |c| async move { lock(c).await },
        ),
    ]
}

/// `android_lock`: KEYCODE_SLEEP (223) puts the phone to sleep whatever its state (POWER would toggle it); AOSP's
/// keyguard locks as the screen goes off when a lock is set (at once for a swipe lock; a secure one after its
/// `lock_screen_lock_after_timeout` unless `power_button_instantly_locks`) and never with the lock set to None.
async fn lock(c: Ctx) -> Result<Value, ProtoError> {
    c.adb.forget_screen_state(&c.device);
    let was_on = !c.adb.screen_state(&c.device).await?.asleep();
    c.adb.shell_ok(&c.device, "input keyevent 223", true, c.spec.deadline).await?;
    let st = settle(&c, |s| s.asleep() && s.is_locked()).await?;
    let mut out = json!({"screen_on": st.screen_on, "locked": st.locked, "was_on": was_on});
    if !st.asleep() {
        out["note"] =
            json!("the screen is still on after KEYCODE_SLEEP (a build that ignores it, or something woke it)");
    } else if st.locked == Some(false) {
        out["note"] =
            json!("the screen is off but no lock screen shows: the phone's screen lock is None (or locks only later)");
    }
    Ok(out)
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
