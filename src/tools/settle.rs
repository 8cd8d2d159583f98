//! Settle and effect: an input tool's ack comes once the screen has stopped changing after the input, and says
//! what changed (`effect`), so an agent needs no fixed sleep and no extra observation to learn whether its tap did
//! anything.
//!
//! How. Before the input: one frame and the foreground window, taken together. After it: frames
//! [`INTERVAL`] apart until two consecutive ones are equal (settled) or `settle_timeout_ms` passed, then one shell
//! round trip for the foreground window and the soft keyboard. A frame is never kept: it is reduced on the host to
//! a [`GRID_W`] × [`GRID_H`] area-averaged signature (a few KB), compared with a small tolerance per cell, and
//! dropped. The pixels cross adb in full (the `framebuffer:` service, as `android_screenshot` takes them — there is
//! no way to ask adbd for a smaller capture), which is why the loop stops at the first stable pair.
//!
//! What `effect` does not carry: the texts that appeared and disappeared. They would need a UI dump before and
//! after every action (a second or more each on real phones, since uiautomator waits for an idle UI); an agent that
//! needs them observes once, after the ack.
//!
//! Failure is never the action's: a frame or a state query that fails leaves its fields `null` (and `settled`
//! false), the input already happened and the result says so. Everything here is an observation (no per-device
//! ordering) and is cancelled by dropping its future, like every device operation.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::screen;
use crate::device::adb::AdbBackend;
use crate::device::formats;
use crate::device::{Backend, DeviceKey};

/// Time between two captures of the settle loop.
pub const INTERVAL: Duration = Duration::from_millis(150);
/// `settle_timeout_ms` when the caller does not say.
pub const DEFAULT_TIMEOUT_MS: u64 = 3000;
/// Largest `settle_timeout_ms` accepted.
pub const MAX_TIMEOUT_MS: u64 = 10_000;
/// What a settling call may take on top of its tool's own deadline besides the settle timeout: the frame and
/// foreground taken before the input ([`BEFORE_LIMIT`]), the state query after ([`STATE_LIMIT`]), one capture
/// overrunning the timeout.
pub const EXTRA_DEADLINE: Duration = Duration::from_secs(6);
/// Bound of the before-the-input phase: a phone that cannot give a frame in this time gets no `screen_changed`.
const BEFORE_LIMIT: Duration = Duration::from_secs(2);
/// Bound of the foreground/keyboard query after settling.
const STATE_LIMIT: Duration = Duration::from_secs(2);
/// Signature size: 24 × 48 cells (a cell is 45 × 50 px on a 1080 × 2400 screen) — enough to see a character typed
/// or a checkbox ticked, small enough to compare in microseconds.
pub const GRID_W: u32 = 24;
pub const GRID_H: u32 = 48;
/// Largest per-channel difference of one cell's average that still counts as "the same" (encoder and dithering
/// noise on real panels; a glyph appearing in a cell moves its average by tens).
const TOLERANCE: u8 = 3;

/// The parsed `settle` / `settle_timeout_ms` of one call (see [`take`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SettleArgs {
    pub settle: bool,
    pub timeout: Duration,
}

/// The two input properties the registry adds to every settling tool (kept terse: the card's token budget; the
/// device profile and SKILL.md explain them).
pub fn input_properties() -> [(&'static str, Value); 2] {
    [
        ("settle", json!({"type": "boolean", "default": true})),
        (
            "settle_timeout_ms",
            json!({"type": "integer", "minimum": 0, "maximum": MAX_TIMEOUT_MS, "default": DEFAULT_TIMEOUT_MS}),
        ),
    ]
}

/// The tool whose `effect` carries the field list; the others point to it (the effect is repeated in eleven
/// output schemas and the card's tool list has a 24 KB token budget). device-profile §5.2 and SKILL.md explain
/// each field.
pub const EXPLAINED_IN: &str = "android_tap";

/// The `effect` result property of a settling tool, defined once: described in full for [`EXPLAINED_IN`] (whose
/// description says that input tools settle and report it), the same object without prose for the others.
pub fn effect_schema(tool_id: &str) -> Value {
    if tool_id == EXPLAINED_IN {
        json!({"type": "object", "description": "After settle: screen_changed, foreground (package/activity), \
            foreground_changed, keyboard_shown, settled, settle_ms; null where unknown"})
    } else {
        json!({"type": "object"})
    }
}

/// Removes `settle`/`settle_timeout_ms` from validated arguments (tools never see them) and parses them.
pub fn take(args: &mut Map<String, Value>) -> SettleArgs {
    let settle = args.remove("settle").and_then(|v| v.as_bool()).unwrap_or(true);
    let ms =
        args.remove("settle_timeout_ms").and_then(|v| v.as_f64()).map_or(DEFAULT_TIMEOUT_MS, |f| f.max(0.0) as u64);
    SettleArgs { settle, timeout: Duration::from_millis(ms.min(MAX_TIMEOUT_MS)) }
}

/// A frame reduced to its grid of cell averages (RGB), or `None` when no frame could be taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature(Vec<u8>);

impl Signature {
    /// Area averages of `rgb` (`w` × `h`, packed RGB) over the grid.
    pub fn of_rgb(rgb: &[u8], w: u32, h: u32) -> Signature {
        Signature(screen::area_downscale_raw(rgb, w as usize, h as usize, 3, GRID_W, GRID_H))
    }

    /// Equal within [`TOLERANCE`] per cell and channel.
    pub fn same(&self, other: &Signature) -> bool {
        self.0.len() == other.0.len() && self.0.iter().zip(&other.0).all(|(a, b)| a.abs_diff(*b) <= TOLERANCE)
    }
}

/// One frame's signature. A 32-bit `framebuffer:` frame (every phone since Android 4) is reduced straight from the
/// bytes adbd sent — the channel order does not matter for comparing two frames of one phone, so nothing is
/// decoded; other depths are decoded first, and raw `screencap` is the fallback when the service fails (old or
/// unusual adbd), as for `android_screenshot`. Holds one of the phone's screenshot permits (`tools::permits`) while the frame is in memory.
async fn signature(adb: &AdbBackend, key: &DeviceKey, deadline: Duration) -> Option<Signature> {
    // Wire size of the largest frame accepted, as for screenshots.
    const CAP: usize = screen::CAPTURE_CAP;
    let _permit = super::permits::captures().acquire(key).await.ok()?;
    let reduce = move |f: Frame| match f {
        Frame::Fb(h, px) => {
            let (w, hh) = (h.width as usize, h.height as usize);
            let need = w.checked_mul(hh).and_then(|n| n.checked_mul(4));
            if h.bpp == 32 && w > 0 && hh > 0 && need.is_some_and(|n| n <= px.len()) {
                Some(Signature(screen::area_downscale_raw(&px, w, hh, 4, GRID_W, GRID_H)))
            } else {
                let img = screen::decode_framebuffer(&h, &px).ok()?;
                Some(Signature::of_rgb(img.as_raw(), img.width(), img.height()))
            }
        }
        Frame::Raw(data) => {
            let img = screen::decode_raw(&data).ok()?;
            Some(Signature::of_rgb(img.as_raw(), img.width(), img.height()))
        }
    };
    let frame = match adb.framebuffer(key, CAP, deadline).await {
        Ok((h, px)) => Frame::Fb(h, px),
        Err(_) => Frame::Raw(adb.exec(key, "screencap", CAP, false, deadline).await.ok()?),
    };
    // CPU-bound but short and bounded: it runs to completion even if the call is dropped.
    tokio::task::spawn_blocking(move || reduce(frame)).await.ok().flatten()
}

enum Frame {
    Fb(crate::device::transport::FbHeader, Vec<u8>),
    Raw(Vec<u8>),
}

/// `package/activity` in front, from [`formats::foreground_command`]'s output.
fn foreground_of(text: &str) -> Option<String> {
    formats::foreground(text).map(|(p, a)| format!("{p}/{a}"))
}

/// What was on screen right before the input.
pub struct Before {
    frame: Option<Signature>,
    foreground: Option<String>,
}

/// Takes the frame and the foreground window before the input, concurrently, within [`BEFORE_LIMIT`].
pub async fn before(adb: &AdbBackend, key: &DeviceKey) -> Before {
    let sdk = adb.info(key).and_then(|i| i.sdk);
    let frame = signature(adb, key, BEFORE_LIMIT);
    let cmd = formats::foreground_command(sdk);
    let fg = adb.shell(key, &cmd, false, BEFORE_LIMIT);
    let work = async { tokio::join!(frame, fg) };
    match tokio::time::timeout(BEFORE_LIMIT, work).await {
        Ok((frame, fg)) => Before { frame, foreground: fg.ok().and_then(|o| foreground_of(&o.stdout)) },
        Err(_) => Before { frame: None, foreground: None },
    }
}

/// Waits until two consecutive frames are equal or `timeout` passed, then reads the foreground and the keyboard;
/// returns the `effect` object. Never fails: what could not be read is `null`.
pub async fn after(adb: &AdbBackend, key: &DeviceKey, before: Before, timeout: Duration) -> Value {
    let started = Instant::now();
    let mut last: Option<Signature> = None;
    let mut settled = false;
    let mut frames = 0u32;
    loop {
        frames += 1;
        let taken = Instant::now();
        let left = timeout.saturating_sub(started.elapsed());
        // A frame that takes longer than what is left of the timeout would only be compared too late.
        let frame = match tokio::time::timeout(left.max(INTERVAL), signature(adb, key, left.max(INTERVAL))).await {
            Ok(Some(f)) => f,
            _ => break,
        };
        if last.as_ref().is_some_and(|l| l.same(&frame)) {
            settled = true;
            last = Some(frame);
            break;
        }
        last = Some(frame);
        // Frames start INTERVAL apart; a capture slower than that (a full frame over USB 2) is followed at once.
        let wait = INTERVAL.saturating_sub(taken.elapsed());
        if started.elapsed() + wait > timeout {
            break;
        }
        tokio::time::sleep(wait).await;
    }
    let settle_ms = started.elapsed().as_millis() as u64;
    tracing::debug!(frames, settle_ms, settled, "settle");
    let sdk = adb.info(key).and_then(|i| i.sdk);
    let cmd = format!("{}; dumpsys input_method | grep mInputShown", formats::foreground_command(sdk));
    let state = match tokio::time::timeout(STATE_LIMIT, adb.shell(key, &cmd, false, STATE_LIMIT)).await {
        Ok(Ok(o)) => Some(o.stdout),
        _ => None,
    };
    let foreground = state.as_deref().and_then(foreground_of);
    let changed = |a: &Option<String>, b: &Option<String>| match (a, b) {
        (Some(a), Some(b)) => Some(a != b),
        _ => None,
    };
    json!({
        "screen_changed": match (&before.frame, &last) {
            (Some(b), Some(a)) => Some(!b.same(a)),
            _ => None,
        },
        "foreground_changed": changed(&before.foreground, &foreground),
        "foreground": foreground,
        "keyboard_shown": state.as_deref().and_then(formats::keyboard_shown),
        "settled": settled,
        "settle_ms": settle_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(w: u32, h: u32, v: u8) -> Vec<u8> {
        vec![v; (w * h * 3) as usize]
    }

    #[test]
    fn arguments_default_and_are_removed() {
        let mut a = Map::new();
        a.insert("x".into(), json!(1));
        assert_eq!(take(&mut a), SettleArgs { settle: true, timeout: Duration::from_millis(3000) });
        a.insert("settle".into(), json!(false));
        a.insert("settle_timeout_ms".into(), json!(500));
        assert_eq!(take(&mut a), SettleArgs { settle: false, timeout: Duration::from_millis(500) });
        assert_eq!(a.keys().collect::<Vec<_>>(), ["x"], "tools never see the settle arguments");
    }

    #[test]
    fn signatures_see_a_glyph_but_not_noise() {
        let (w, h) = (1080, 2400);
        let base = flat(w, h, 200);
        let a = Signature::of_rgb(&base, w, h);
        // Noise of ±1 everywhere: the same screen.
        let noisy: Vec<u8> = base.iter().enumerate().map(|(i, v)| if i % 2 == 0 { v + 1 } else { v - 1 }).collect();
        assert!(a.same(&Signature::of_rgb(&noisy, w, h)));
        // A 20 × 30 px dark glyph in one cell: a change.
        let mut glyph = base.clone();
        for y in 1000..1030 {
            for x in 500..520 {
                let i = ((y * w + x) * 3) as usize;
                glyph[i..i + 3].copy_from_slice(&[30, 30, 30]);
            }
        }
        assert!(!a.same(&Signature::of_rgb(&glyph, w, h)));
    }

    #[test]
    fn the_budget_of_the_card_is_kept() {
        let props: Map<String, Value> = input_properties().into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        let input = serde_json::to_string(&props).unwrap().len();
        let effect = serde_json::to_string(&effect_schema("android_key")).unwrap().len();
        assert!(input <= 220, "settle input properties: {input} bytes");
        assert!(effect <= 350, "effect schema: {effect} bytes");
        eprintln!("settle input properties {input} B, effect schema {effect} B (compact JSON)");
    }
}
