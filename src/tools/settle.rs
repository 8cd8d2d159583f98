//! Settle and effect: an input tool's ack comes once the screen has stopped changing after the input, and says
//! what changed (`effect`), so an agent needs no fixed sleep and no extra observation to learn whether its tap did
//! anything.
//!
//! How. Before the input: one frame and the foreground window, taken together. After it: frames [`INTERVAL`]
//! apart, the first [`REACTION`] after the input, until one equals the frame before it (the frame taken before the
//! input counts: on a screen the input did not change, one capture after it settles) or `settle_timeout_ms`
//! passed; the foreground window and the soft keyboard are read alongside each frame. A frame is never kept: it is
//! captured as `android_screenshot` captures (compressed where the phone can, downscaled as it arrives), reduced
//! on the host to a [`GRID_W`] × [`GRID_H`] area-averaged signature (a few KB), compared with a small tolerance per
//! cell, and dropped. Each frame still costs the phone a display read, which is why the loop stops at the first
//! stable pair.
//!
//! What the UI tree gained and lost (`effect.tree`, [`super::delta`]) costs a tree read before and after the
//! action. Where the phone helper reads trees (tens of ms, no idle wait) it comes by default (`effect_tree: false`
//! turns it off); on the shell path each read is a `uiautomator dump` — a second or more on real phones, since
//! uiautomator waits for an idle UI — so there it comes only when asked (`effect_tree: true`). The elements it
//! lists are targets with the observation id beside them.
//!
//! Failure is never the action's: a frame or a state query that fails leaves its fields `null` (and `settled`
//! false), the input already happened and the result says so. Everything here is an observation (no per-device
//! ordering) and is cancelled by dropping its future, like every device operation.

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::device::adb::AdbBackend;
use crate::device::formats;
use crate::device::{Backend, DeviceKey};
use crate::pixels::capture::{self, CapturePath, DEFAULT_PATH};
use crate::pixels::downscale::area_downscale_raw;
use crate::protocol::errors::ErrorCode;

/// Time between two captures of the settle loop.
pub const INTERVAL: Duration = Duration::from_millis(150);
/// How long after the input the first frame is taken: the app's chance to react before the screen can be seen
/// still. `input` injects with `WAIT_FOR_FINISH`, so when it returns the app has handled the event; its redraw
/// shows within a vsync or two (17–33 ms at 60 Hz), and the capture's display read comes a USB round trip after the
/// request. 100 ms covers that three times over; an app that reacts later (a network answer) is caught by neither
/// this nor a longer fixed wait, which is why `effect` says what it saw, not what will come.
pub const REACTION: Duration = Duration::from_millis(100);
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

/// The parsed `settle` / `settle_timeout_ms` / `effect_tree` of one call (see [`take`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SettleArgs {
    pub settle: bool,
    pub timeout: Duration,
    /// `effect.tree`: the UI-tree delta of the action (a tree read before and after it). `None`: not said — on when
    /// the phone helper reads the tree (cheap), off on the shell path (see `device.rs`).
    pub tree: Option<bool>,
}

/// The input properties the registry adds to every settling tool (kept terse: the card's token budget; the
/// device profile and SKILL.md explain them).
pub fn input_properties() -> [(&'static str, Value); 3] {
    [
        ("settle", json!({"type": "boolean", "default": true})),
        (
            "settle_timeout_ms",
            json!({"type": "integer", "minimum": 0, "maximum": MAX_TIMEOUT_MS, "default": DEFAULT_TIMEOUT_MS}),
        ),
        ("effect_tree", json!({"type": "boolean"})),
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
            foreground_changed, keyboard_shown, settled, settle_ms; null where unknown; tree: appeared, \
            disappeared, changed elements, observation_id, state — by default when the phone helper reads trees \
            (~50 ms), else with effect_tree: true (two uiautomator dumps, ~1-3 s)"})
    } else {
        json!({"type": "object"})
    }
}

/// A key a settling tool may put in its result when it read the UI tree before and after its input (scroll reads
/// one per swipe): whether the tree changed. [`merge_tree_changed`] takes it out and counts it in `screen_changed`:
/// pixels alone miss a list of look-alike rows scrolled by whole rows (issue 35).
pub const TREE_CHANGED: &str = "_tree_changed";

/// Moves the tool's [`TREE_CHANGED`] into `effect`: `tree_changed`, and `screen_changed` true when the tree changed
/// whatever the pixels said.
pub fn merge_tree_changed(result: &mut Map<String, Value>, effect: &mut Value) {
    let Some(changed) = result.remove(TREE_CHANGED).and_then(|v| v.as_bool()) else { return };
    effect["tree_changed"] = json!(changed);
    if changed {
        effect["screen_changed"] = json!(true);
    }
}

/// Removes `settle`/`settle_timeout_ms`/`effect_tree` from validated arguments (tools never see them) and parses
/// them.
pub fn take(args: &mut Map<String, Value>) -> SettleArgs {
    let settle = args.remove("settle").and_then(|v| v.as_bool()).unwrap_or(true);
    let ms =
        args.remove("settle_timeout_ms").and_then(|v| v.as_f64()).map_or(DEFAULT_TIMEOUT_MS, |f| f.max(0.0) as u64);
    let tree = args.remove("effect_tree").and_then(|v| v.as_bool());
    SettleArgs { settle, timeout: Duration::from_millis(ms.min(MAX_TIMEOUT_MS)), tree }
}

/// A frame reduced to its grid of cell averages (RGB), or `None` when no frame could be taken.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Signature {
    cells: Vec<u8>,
    /// Who averaged it: the phone helper (every pixel, on the phone) or this host (a capture fitted on the way in).
    /// Two signatures are only compared when the same side made both: their roundings differ by a unit or two.
    on_phone: bool,
}

impl Signature {
    /// Area averages of `rgb` (`w` × `h`, packed RGB) over the grid.
    pub fn of_rgb(rgb: &[u8], w: u32, h: u32) -> Signature {
        Signature { cells: area_downscale_raw(rgb, w as usize, h as usize, 3, GRID_W, GRID_H), on_phone: false }
    }

    /// Whether `other` was made the same way, so that [`Signature::same`] means something.
    pub fn comparable(&self, other: &Signature) -> bool {
        self.on_phone == other.on_phone && self.cells.len() == other.cells.len()
    }

    /// Made the same way and equal within [`TOLERANCE`] per cell and channel.
    pub fn same(&self, other: &Signature) -> bool {
        self.comparable(other) && self.cells.iter().zip(&other.cells).all(|(a, b)| a.abs_diff(*b) <= TOLERANCE)
    }

    /// The phone helper's `frame` payload, `W H GW GH <base64>` (device-profile/phone-helper.md §4), for the grid
    /// asked; `None` for anything else — a hostile or broken reply is no signature, and the capture path takes
    /// over.
    pub fn of_helper_frame(payload: &str) -> Option<Signature> {
        let mut f = payload.strip_prefix("frame ")?.split(' ');
        let mut num = || f.next()?.parse::<u32>().ok();
        let (w, h, gw, gh) = (num()?, num()?, num()?, num()?);
        if w == 0 || h == 0 || gw != GRID_W || gh != GRID_H {
            return None;
        }
        let cells = crate::base64::decode(f.next()?)?;
        (f.next().is_none() && cells.len() == (GRID_W * GRID_H * 3) as usize)
            .then_some(Signature { cells, on_phone: true })
    }
}

/// The long side of the picture a signature is made from: the capture downscales to it as the frame arrives
/// (issue 24's fitted path), so no full-size frame is held, and the grid is averaged from it.
const SIGNATURE_FIT: u32 = 192;

/// How long the phone helper's `frame` may take before the capture path is tried instead: the display read and
/// the averaging take tens of ms on a phone; a helper slower than this is not saving anything.
const HELPER_FRAME_LIMIT: Duration = Duration::from_millis(1500);

/// One frame's signature. Where the phone helper runs, its `frame` verb: the display read in the helper's process
/// and averaged there to the grid, a few KB on the helper's stream — no `screencap` process, no temp file, no
/// compression, one request (issue 32: a capture's six streams made settle's frames most of a settled tap's cost).
/// Elsewhere, or when the helper cannot, the frame is captured the way `android_screenshot` captures (the
/// compressed capture where the phone has a working gzip: a fraction of the framebuffer's bytes over USB; the
/// framebuffer otherwise; raw `screencap` when both fail), downscaled to [`SIGNATURE_FIT`] on the way in, holding
/// one of the phone's screenshot permits (`tools::permits`) while the frame is in memory.
///
/// `on_phone`: whether to ask the helper at all — the frames of one settle come from one side (see
/// [`Signature::comparable`]), and a helper not running yet is not started for a frame.
async fn signature(adb: &AdbBackend, key: &DeviceKey, deadline: Duration, on_phone: bool) -> Option<Signature> {
    let end = tokio::time::Instant::now() + deadline;
    let grid = format!("{GRID_W} {GRID_H}");
    let limit = deadline.min(HELPER_FRAME_LIMIT);
    let asked = if on_phone && adb.helpers().running(key) {
        adb.helper(key, false, limit, "frame", &grid, Duration::ZERO).await
    } else {
        Ok(None)
    };
    if let Ok(Some(payload)) = asked {
        if let Some(sig) = Signature::of_helper_frame(&payload) {
            return Some(sig);
        }
        tracing::debug!(len = payload.len(), "the helper's frame reply is not a signature; capturing instead");
    }
    let left = |end: tokio::time::Instant| end.saturating_duration_since(tokio::time::Instant::now());
    let _permit = super::permits::captures().acquire(key).await.ok()?;
    let shot = match capture::capture(adb, key, DEFAULT_PATH, SIGNATURE_FIT, left(end)).await {
        Ok(c) => c,
        Err(e) if e.code == ErrorCode::DeviceTimeout => return None,
        Err(_) => capture::capture(adb, key, CapturePath::Raw, SIGNATURE_FIT, left(end).max(Duration::from_millis(1)))
            .await
            .ok()?,
    };
    // CPU-bound but short and bounded: it runs to completion even if the call is dropped.
    tokio::task::spawn_blocking(move || {
        let img = shot.picture.fit(SIGNATURE_FIT);
        Signature::of_rgb(img.as_raw(), img.width(), img.height())
    })
    .await
    .ok()
}

/// `package/activity` in front, from [`formats::foreground_command`]'s output.
fn foreground_of(text: &str) -> Option<String> {
    formats::foreground(text).map(|(p, a)| format!("{p}/{a}"))
}

/// The accessibility quiet settle waits for through the phone helper's `idle` before its first frame: as long as
/// [`REACTION`], so a still screen costs no more time than without it.
pub const IDLE_QUIET: Duration = REACTION;

/// Waits, where the phone helper runs, until no accessibility event has come for [`IDLE_QUIET`] (its `idle` verb),
/// at most `timeout`: `Some(true)` quiet, `Some(false)` still busy at the timeout, `None` without a helper (its
/// `idle` fell back; the frames alone decide then).
async fn quiet(adb: &AdbBackend, key: &DeviceKey, timeout: Duration) -> Option<bool> {
    let args = format!("{} {}", IDLE_QUIET.as_millis(), timeout.as_millis());
    let reply = adb.helper(key, false, timeout + STATE_LIMIT, "idle", &args, timeout).await.ok()??;
    match reply.split(' ').next() {
        Some("idle") => Some(true),
        Some("busy") => Some(false),
        _ => None,
    }
}

/// What was on screen right before the input.
pub struct Before {
    frame: Option<Signature>,
    foreground: Option<String>,
}

/// Takes the frame and the foreground window before the input, concurrently, within [`BEFORE_LIMIT`].
pub async fn before(adb: &AdbBackend, key: &DeviceKey) -> Before {
    let sdk = adb.info(key).and_then(|i| i.sdk);
    let frame = signature(adb, key, BEFORE_LIMIT, true);
    let cmd = formats::foreground_command(sdk);
    let fg = adb.shell(key, &cmd, false, BEFORE_LIMIT);
    let work = async { tokio::join!(frame, fg) };
    match tokio::time::timeout(BEFORE_LIMIT, work).await {
        Ok((frame, fg)) => Before { frame, foreground: fg.ok().and_then(|o| foreground_of(&o.stdout)) },
        Err(_) => Before { frame: None, foreground: None },
    }
}

/// Waits until the screen is seen still or `timeout` passed, then returns the `effect` object. Never fails: what
/// could not be read is `null`.
///
/// Still: a frame equal to the one before it, [`INTERVAL`] apart. The first frame is taken [`REACTION`] after the
/// input (the app's chance to react) and compared with the frame taken before the input: on a screen the input did
/// not change, that pair is already the proof, and one capture after the input is all the settle costs (issue 31).
/// The foreground and the keyboard are read alongside every frame (one shell round trip, hidden behind the
/// capture); the reading that came with the last frame is the one reported.
///
/// Where the phone helper runs, the first frame also waits for accessibility quiet (the helper's `idle`: no event
/// for [`IDLE_QUIET`]), never less than [`REACTION`]: while a transition animates the app sends events, and the
/// frames that would only have seen it move are not captured at all (each is a display read on the phone). Quiet is
/// no proof of still pixels (a video surface sends no events), so the frames still decide: the first after quiet
/// is compared with the one before the input, and a changed screen needs a second, equal one. A helper still busy
/// at the timeout gets one frame (for `screen_changed`) and `settled: false`.
pub async fn after(adb: &AdbBackend, key: &DeviceKey, before: Before, timeout: Duration) -> Value {
    let started = Instant::now();
    let quiet = quiet(adb, key, timeout).await;
    let sdk = adb.info(key).and_then(|i| i.sdk);
    let cmd = format!("{}; dumpsys input_method | grep mInputShown", formats::foreground_command(sdk));
    let query = || async {
        match tokio::time::timeout(STATE_LIMIT, adb.shell(key, &cmd, false, STATE_LIMIT)).await {
            Ok(Ok(o)) => Some(o.stdout),
            _ => None,
        }
    };
    let mut last: Option<Signature> = before.frame.clone();
    let mut state: Option<String>;
    let mut settled = false;
    let mut frames = 0u32;
    // Never before REACTION, quiet or not: the helper injects without waiting for the app, whose first event may
    // not have come yet when `idle` answers.
    let mut next = started + REACTION.min(timeout);
    loop {
        tokio::time::sleep_until(next.into()).await;
        frames += 1;
        let taken = Instant::now();
        let left = timeout.saturating_sub(started.elapsed());
        // A frame that takes longer than what is left of the timeout would only be compared too late.
        let limit = left.max(INTERVAL);
        let on_phone = last.as_ref().is_none_or(|l| l.on_phone);
        let (frame, st) = tokio::join!(tokio::time::timeout(limit, signature(adb, key, limit, on_phone)), query());
        state = st;
        let Ok(Some(frame)) = frame else { break };
        if quiet == Some(false) {
            // Busy until the timeout: this frame is for `screen_changed` only.
            last = Some(frame);
            break;
        }
        if last.as_ref().is_some_and(|l| l.same(&frame)) {
            settled = true;
            last = Some(frame);
            break;
        }
        last = Some(frame);
        // Frames start INTERVAL apart; a capture slower than that is followed at once.
        next = (taken + INTERVAL).max(Instant::now());
        if next > started + timeout {
            break;
        }
    }
    let settle_ms = started.elapsed().as_millis() as u64;
    tracing::debug!(frames, settle_ms, settled, ?quiet, "settle");
    let foreground = state.as_deref().and_then(foreground_of);
    let changed = |a: &Option<String>, b: &Option<String>| match (a, b) {
        (Some(a), Some(b)) => Some(a != b),
        _ => None,
    };
    json!({
        // Frames made on different sides (the helper failed in between) are not compared: unknown.
        "screen_changed": match (&before.frame, &last) {
            (Some(b), Some(a)) if b.comparable(a) => Some(!b.same(a)),
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
        assert_eq!(take(&mut a), SettleArgs { settle: true, timeout: Duration::from_millis(3000), tree: None });
        a.insert("settle".into(), json!(false));
        a.insert("settle_timeout_ms".into(), json!(500));
        a.insert("effect_tree".into(), json!(true));
        assert_eq!(take(&mut a), SettleArgs { settle: false, timeout: Duration::from_millis(500), tree: Some(true) });
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

    /// The helper's `frame` reply is a phone's bytes: only the grid asked, whole, well-formed, is a signature.
    #[test]
    fn a_helper_frame_is_a_signature_only_when_it_is_the_grid_asked() {
        let cells = vec![7u8; (GRID_W * GRID_H * 3) as usize];
        let b64 = crate::base64::encode(&cells);
        let sig = Signature::of_helper_frame(&format!("frame 1080 2400 {GRID_W} {GRID_H} {b64}")).unwrap();
        assert!(sig.same(&sig.clone()));
        let short = crate::base64::encode(&cells[1..]);
        for bad in [
            format!("frame 1080 2400 {GRID_W} {GRID_H} {short}"),
            format!("frame 1080 2400 8 8 {b64}"),
            format!("frame 0 2400 {GRID_W} {GRID_H} {b64}"),
            format!("frame 1080 2400 {GRID_W} {GRID_H} {b64} more"),
            format!("frame 1080 2400 {GRID_W} {GRID_H} ***"),
            format!("xml {b64}"),
            "frame".to_owned(),
        ] {
            assert!(Signature::of_helper_frame(&bad).is_none(), "{bad}");
        }
        // The same cells averaged on the host are not compared with the phone's: different roundings.
        let host = Signature { cells, on_phone: false };
        assert!(!host.comparable(&sig) && !host.same(&sig));
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
