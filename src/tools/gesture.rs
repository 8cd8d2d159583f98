//! Multi-touch tools (issue 32): `android_pinch` (two fingers moving apart or together around a point or an
//! element: zoom a map, a photo, a page) and `android_gesture` (explicit paths for up to ten fingers: a two-finger
//! swipe, a rotation). Both go through the phone helper's `gesture` verb (device-profile/phone-helper.md §4), the
//! only multi-touch this connector has: `input` injects one pointer, so where the helper is off or cannot inject
//! they answer `unsupported_gesture` with the reason, and never send a one-finger swipe in their place (it would
//! scroll, or drag, where the agent meant to zoom).

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::acted::{acted_schema, re_resolved_schema, with_element, with_woke, woke_schema, MAX_COORD};
use super::args;
use super::context::{invalid, Ctx};
use super::device::tool;
use super::gate::{ready_for_input, InputGate};
use super::registry::{Tool, ToolSpec};
use super::target::{self, ElementArg};
use crate::device::adb::AdbBackend;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// The helper's bounds (phone-helper.md §4): 1–10 pointers, 1–64 points each.
const MAX_POINTERS: usize = 10;
const MAX_POINTS: usize = 64;

/// How far from the centre the farther finger goes: this share of the room to the target's nearer edge, so both
/// fingers start and end inside it (an edge swipe would open the notification shade or go back).
const REACH_NUM: i64 = 4;
const REACH_DEN: i64 = 5;
/// Fingers closer than this (centre to finger, px) touch each other on a real screen: the digitizer merges them.
const MIN_HALF_SPAN: i64 = 24;
/// A pinch that moves each finger less than this (px) is below touch slop: apps see no pinch at all.
const MIN_TRAVEL: i64 = 16;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PinchArgs {
    /// As android_tap's element; the fingers stay inside it
    element: Option<ElementArg>,
    #[schemars(range(min = 0, max = MAX_COORD))]
    x: Option<i64>,
    #[schemars(range(min = 0, max = MAX_COORD))]
    y: Option<i64>,
    /// End ÷ start distance between the fingers
    #[schemars(range(min = 0.1, max = 10.0))]
    scale: f64,
    #[schemars(range(min = 100, max = 10_000))]
    #[serde(default = "ms_400")]
    duration_ms: u32,
}

fn ms_400() -> u32 {
    400
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GestureArgs {
    /// A path per finger: [x, y] points, the same number (1–64) each
    #[schemars(length(min = 1, max = MAX_POINTERS))]
    pointers: Vec<Vec<[i64; 2]>>,
    /// Of the whole path (one point: the hold)
    #[schemars(range(min = 0, max = 10_000))]
    #[serde(default = "ms_300")]
    duration_ms: u32,
}

fn ms_300() -> u32 {
    300
}

pub fn tools(adb: &Arc<AdbBackend>, gate: InputGate) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolSpec {
                id: "android_pinch",
                title: "Pinch (zoom) with two fingers",
                description: "Two fingers apart (scale > 1: zoom in) or together (< 1: zoom out) around `element`, \
                              (x, y) or the screen's centre. Needs the phone helper (else unsupported_gesture).",
                input: args::schema::<PinchArgs>(),
                output: json!({"type": "object", "properties": {
                    "x": {"type": "integer"}, "y": {"type": "integer"},
                    "axis": {"type": "string", "enum": ["horizontal", "vertical"]},
                    "span_from": {"type": "integer"}, "span_to": {"type": "integer"}, "duration_ms": {"type": "integer"}, "woke": woke_schema(),
                    "element": acted_schema(), "re_resolved": re_resolved_schema()}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            move |c| async move {
                let a: PinchArgs = c.parse()?;
                let ms = u64::from(a.duration_ms);
                let target = target::parse(a.element.as_ref(), "element")?;
                if target.is_some() && (a.x.is_some() || a.y.is_some()) {
                    return Err(invalid("give either `element` or `x` and `y`, not both"));
                }
                if a.x.is_some() != a.y.is_some() {
                    return Err(invalid("give both `x` and `y` (or neither: the screen's centre)"));
                }
                let ready = ready_for_input(&c, gate).await?;
                let (w, h) = c.adb.display_size(&c.device).await?;
                let screen = [0, 0, i64::from(w), i64::from(h)];
                let (centre, area, on) = match (target, a.x, a.y) {
                    (Some(t), _, _) => {
                        let r = target::resolve(&c, &t).await?;
                        let [l, t, rt, b] = r.element.bounds.map(i64::from);
                        // The element's part on screen: a list row half scrolled off keeps the fingers on screen.
                        let area = [l.max(0), t.max(0), rt.min(screen[2]), b.min(screen[3])];
                        (r.point(), area, Some(r))
                    }
                    (None, Some(x), Some(y)) => ((x, y), screen, None),
                    _ => ((screen[2] / 2, screen[3] / 2), screen, None),
                };
                c.check_point(centre.0, centre.1, "pinch centre").await?;
                let p = plan_pinch(centre, area, a.scale)?;
                send(&c, ms, &[vec![p.from[0], p.to[0]], vec![p.from[1], p.to[1]]]).await?;
                ready.sent(&c);
                let out = json!({"x": centre.0, "y": centre.1, "axis": p.axis, "span_from": p.span_from,
                                 "span_to": p.span_to, "duration_ms": ms});
                Ok(with_woke(with_element(out, on), ready.woke))
            },
        ),
        tool(
            ToolSpec {
                id: "android_gesture",
                title: "Multi-finger gesture",
                description: "Up to 10 fingers at once, each along its path: two-finger swipes, rotations. Needs the \
                              phone helper (else unsupported_gesture).",
                input: args::schema::<GestureArgs>(),
                output: json!({"type": "object", "properties": {
                    "pointers": {"type": "integer"}, "points": {"type": "integer"},
                    "duration_ms": {"type": "integer"}, "woke": woke_schema()}}),
                side_effect: true,
                settles: true,
                deadline: Duration::from_secs(20),
            },
            adb,
            move |c| async move {
                let a: GestureArgs = c.parse()?;
                let ms = u64::from(a.duration_ms);
                let n = a.pointers.first().map_or(0, Vec::len);
                if !(1..=MAX_POINTERS).contains(&a.pointers.len()) || !(1..=MAX_POINTS).contains(&n) {
                    return Err(invalid(format!(
                        "`pointers` takes 1 to {MAX_POINTERS} fingers, each a path of 1 to {MAX_POINTS} [x, y] points"
                    )));
                }
                if let Some(i) = a.pointers.iter().position(|p| p.len() != n) {
                    return Err(invalid(format!(
                        "every finger's path needs the same number of points (they move together): pointers[0] \
                         has {n}, pointers[{i}] has {}",
                        a.pointers[i].len()
                    )));
                }
                let ready = ready_for_input(&c, gate).await?;
                for (i, path) in a.pointers.iter().enumerate() {
                    for (j, [x, y]) in path.iter().enumerate() {
                        c.check_point(*x, *y, &format!("pointers[{i}][{j}]")).await?;
                    }
                }
                let paths: Vec<Vec<(i64, i64)>> =
                    a.pointers.iter().map(|p| p.iter().map(|[x, y]| (*x, *y)).collect()).collect();
                send(&c, ms, &paths).await?;
                ready.sent(&c);
                Ok(with_woke(json!({"pointers": paths.len(), "points": n, "duration_ms": ms}), ready.woke))
            },
        ),
    ]
}

/// Where a pinch's two fingers start and end.
#[derive(Debug, PartialEq)]
struct Pinch {
    axis: &'static str,
    from: [(i64, i64); 2],
    to: [(i64, i64); 2],
    span_from: i64,
    span_to: i64,
}

/// The fingers of a pinch of `scale` around `centre` inside `area` (`[left, top, right, bottom)`): along the axis
/// with more room, the farther finger at [`REACH_NUM`]/[`REACH_DEN`] of the room to the nearer edge.
fn plan_pinch((cx, cy): (i64, i64), [l, t, r, b]: [i64; 4], scale: f64) -> Result<Pinch, ProtoError> {
    if !(scale.is_finite() && scale > 0.0) {
        return Err(invalid(format!("`scale` must be above 0 (< 1 pinches in, > 1 out), got {scale}")));
    }
    let room_x = (cx - l).min(r - 1 - cx);
    let room_y = (cy - t).min(b - 1 - cy);
    let (axis, room) = if room_y > room_x { ("vertical", room_y) } else { ("horizontal", room_x) };
    let far = room * REACH_NUM / REACH_DEN;
    let near = (far as f64 * scale.min(1.0 / scale)).round() as i64;
    if near < MIN_HALF_SPAN {
        return Err(invalid(format!(
            "no room to pinch by {scale} here: the fingers would come within {} px of each other (the target allows \
             {} px between them at most); choose a larger element or a scale closer to 1",
            2 * near.max(0),
            2 * far.max(0)
        )));
    }
    if far - near < MIN_TRAVEL {
        return Err(invalid(format!(
            "scale {scale} moves each finger only {} px, too little for any app to see a pinch; use a scale \
             further from 1 (e.g. 0.5 or 2)",
            far - near
        )));
    }
    let (start, end) = if scale > 1.0 { (near, far) } else { (far, near) };
    let at = |half: i64| -> [(i64, i64); 2] {
        if axis == "vertical" {
            [(cx, cy - half), (cx, cy + half)]
        } else {
            [(cx - half, cy), (cx + half, cy)]
        }
    };
    Ok(Pinch { axis, from: at(start), to: at(end), span_from: 2 * start, span_to: 2 * end })
}

/// Plays the gesture through the phone helper; where it cannot, `unsupported_gesture` says why and what to do.
async fn send(c: &Ctx, ms: u64, paths: &[Vec<(i64, i64)>]) -> Result<(), ProtoError> {
    let args: Vec<String> = std::iter::once(ms.to_string())
        .chain(paths.iter().map(|p| p.iter().map(|(x, y)| format!("{x},{y}")).collect::<Vec<_>>().join(",")))
        .collect();
    let held = Duration::from_millis(ms);
    match c.adb.helper(&c.device, true, c.spec.deadline, "gesture", &args.join(" "), held).await? {
        Some(_) => Ok(()),
        None => Err(unsupported(&c.adb.helpers().report(&c.device))),
    }
}

/// The error of a gesture the helper did not play, from its report (`android_device_status`'s `phone_helper`).
fn unsupported(report: &Value) -> ProtoError {
    const WHY: &str = "multi-touch needs the phone helper: `input` injects one finger only, and a one-finger swipe \
                       instead would scroll or drag";
    let gesture_failed = report["last_fallback"]["verb"] == "gesture";
    let fell_back = report["fell_back"]["gesture"].as_str().or(report["fell_back"]["touch"].as_str());
    let (reason, todo) = if report["state"] == "off" {
        (
            "the connector runs with --phone-helper off".to_owned(),
            "ask the operator to run it with --phone-helper auto; nothing was sent",
        )
    } else if let Some(r) = report["reason"].as_str() {
        (format!("the helper is unavailable on this phone ({r})"), "nothing was sent; do without multi-touch")
    } else if let Some(r) = fell_back {
        (
            format!("the helper cannot inject touches on this phone ({r})"),
            "nothing was sent; do without multi-touch (one finger: android_swipe)",
        )
    } else if gesture_failed {
        let r = report["last_fallback"]["reason"].as_str().unwrap_or("");
        (format!("the helper did not answer it ({r})"), "it may have been played in part: observe before retrying")
    } else {
        ("the helper is not available".to_owned(), "nothing was sent; see android_device_status's phone_helper")
    };
    ProtoError::new(ErrorCode::UnsupportedGesture, format!("{WHY}; {reason}: {todo}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCREEN: [i64; 4] = [0, 0, 1080, 2400];

    #[test]
    fn a_pinch_out_on_the_screen_moves_two_fingers_apart_along_its_longer_room() {
        let p = plan_pinch((540, 1200), SCREEN, 2.0).unwrap();
        // Room: 539 px across, 1199 down: vertical, the farther finger at 4/5 of 1199 (959), the nearer at half that.
        assert_eq!(p.axis, "vertical");
        assert_eq!((p.span_from, p.span_to), (960, 1918));
        assert_eq!(p.from, [(540, 720), (540, 1680)]);
        assert_eq!(p.to, [(540, 241), (540, 2159)]);
    }

    #[test]
    fn a_pinch_in_on_a_wide_element_stays_inside_it() {
        let p = plan_pinch((540, 978), [40, 900, 1040, 1056], 0.5).unwrap();
        assert_eq!(p.axis, "horizontal");
        assert_eq!(p.from, [(141, 978), (939, 978)]);
        assert_eq!(p.to, [(340, 978), (740, 978)]);
    }

    #[test]
    fn pinches_no_app_could_see_are_refused() {
        let e = plan_pinch((540, 1200), SCREEN, 1.01).unwrap_err();
        assert!(e.message.contains("further from 1"), "{}", e.message);
        let e = plan_pinch((10, 10), SCREEN, 2.0).unwrap_err();
        assert!(e.message.contains("no room"), "{}", e.message);
        for bad in [0.0, -1.0, f64::NAN] {
            assert_eq!(plan_pinch((540, 1200), SCREEN, bad).unwrap_err().code, ErrorCode::InvalidArguments);
        }
    }

    #[test]
    fn the_error_says_why_and_what_to_do() {
        let off = unsupported(&json!({"state": "off", "reason": "--phone-helper off"}));
        assert_eq!(off.code, ErrorCode::UnsupportedGesture);
        assert!(off.message.contains("--phone-helper auto"), "{}", off.message);
        let denied = unsupported(&json!({"state": "running", "fell_back": {"gesture": "denied: enable it"}}));
        assert!(denied.message.contains("denied: enable it") && denied.message.contains("one finger"));
        let old = unsupported(&json!({"state": "unavailable", "reason": "Android older than 8"}));
        assert!(old.message.contains("Android older than 8"), "{}", old.message);
    }
}
