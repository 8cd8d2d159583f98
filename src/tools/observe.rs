//! `android_observe`: everything an agent needs to decide its next step, from one call. One screen capture and one
//! UI dump are taken concurrently (with the foreground window, the keyboard state and the screen geometry); the
//! screenshot gets numbered marks (a box around each interactive element, its index in a small label at a corner)
//! and the element list carries the same indices, so an agent can look at the picture and act by number
//! (`element: {index, observation_id}` on the control tools, resolved by [`super::target`]).

use std::sync::Arc;
use std::time::{Duration, Instant};

use image::RgbImage;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::Ctx;
use super::device::tool;
use super::dump;
use super::element::{self, Element};
use super::observations;
use super::registry::{Tool, ToolSpec};
use super::web::{self, Web};
use super::{args, picture};
use crate::device::adb::AdbBackend;
use crate::device::formats;
use crate::device::Backend;
use crate::files::{self, NewFile};
use crate::pixels::capture::{capture, CapturePath, DEFAULT_PATH};
use crate::pixels::encode::{encode, Format};
use crate::protocol::errors::{ErrorCode, ProtoError};

/// How long observe waits for the UI tree: uiautomator's own idle wait is 10 s, after which a screen that never
/// idles is reported (`ui_available: false`); the picture comes back within ~15 s whatever the tree does.
const OBSERVE_DUMP_DEADLINE: Duration = Duration::from_secs(13);
/// When the tree and a web page's read are done at the latest (the page gets what the tree left of it, at most
/// `web::READ_DEADLINE`): the observe still answers within ~15 s.
const OBSERVE_TREE_AND_PAGE: Duration = Duration::from_secs(15);
// The store moved to `observations.rs`; the server (channel close, `/health`), `run.rs` (the sweep) and the tests
// still name it here, as android_observe's.
pub use super::observations::{forget_channel, held, sweep, ttl, OBSERVATIONS_PER_CHANNEL};

// ---- marks -------------------------------------------------------------------------------------------------------

/// The box colour: a saturated magenta-pink that stands out on the white, grey, blue and dark surfaces of most UIs.
pub const MARK_COLOR: [u8; 3] = [236, 0, 140];
/// Label background (drawn at [`LABEL_ALPHA`] over the screenshot): a darker shade of the box colour, so white
/// digits keep a high contrast on any background while the element below still shows through.
const LABEL_COLOR: [u8; 3] = [120, 0, 70];
const LABEL_ALPHA: u32 = 205; // of 255, ≈ 80 %

/// 3×5 bitmap digits, row-major, most significant bit first (15 bits per glyph).
const DIGITS: [u16; 10] = [
    0b111_101_101_101_111,
    0b010_110_010_010_111,
    0b111_001_111_100_111,
    0b111_001_111_001_111,
    0b101_101_111_001_001,
    0b111_100_111_001_111,
    0b111_100_111_101_111,
    0b111_001_001_001_001,
    0b111_101_111_101_111,
    0b111_101_111_001_111,
];

/// Whether cell (`col`, `row`) of `digit`'s 3×5 glyph is lit.
pub fn glyph_on(digit: u8, col: u32, row: u32) -> bool {
    DIGITS[usize::from(digit % 10)] >> (14 - (row * 3 + col)) & 1 == 1
}

/// Geometry of the marks for an image whose long side is `long`: (box line width, glyph cell size).
pub fn mark_metrics(long: u32) -> (u32, u32) {
    ((long / 400).max(2), (long / 320).max(2))
}

/// Where one mark's label went (image pixels; the digits start at `x + cell`, `y + cell`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Label {
    pub index: usize,
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
}

impl Label {
    fn overlaps(&self, o: &Label) -> bool {
        self.x < o.x + o.w && o.x < self.x + self.w && self.y < o.y + o.h && o.y < self.y + self.h
    }
}

/// Draws a box and a numbered label for each `(index, bounds)` (bounds in device pixels; `sx`/`sy` map them to
/// image pixels). Boxes are drawn inside the element's bounds; the label sits in a corner of the box (the first
/// of top-left, top-right, bottom-left, bottom-right that does not cover an earlier label), so it hides as little
/// of the element's own content as possible.
pub fn draw_marks(img: &mut RgbImage, marks: &[(usize, [i32; 4])], sx: f64, sy: f64) -> Vec<Label> {
    let (iw, ih) = img.dimensions();
    let (lw, cell) = mark_metrics(iw.max(ih));
    let mut labels: Vec<Label> = Vec::new();
    for &(index, b) in marks {
        let map = |v: i32, s: f64, max: u32| ((f64::from(v) * s).round().max(0.0) as u32).min(max);
        let (x0, y0, x1, y1) = (map(b[0], sx, iw), map(b[1], sy, ih), map(b[2], sx, iw), map(b[3], sy, ih));
        if x1 <= x0 || y1 <= y0 {
            continue;
        }
        let t = lw.min((x1 - x0) / 2).min((y1 - y0) / 2).max(1);
        fill(img, x0, y0, x1, y0 + t, MARK_COLOR, 255);
        fill(img, x0, y1 - t, x1, y1, MARK_COLOR, 255);
        fill(img, x0, y0, x0 + t, y1, MARK_COLOR, 255);
        fill(img, x1 - t, y0, x1, y1, MARK_COLOR, 255);

        let text = index.to_string();
        let n = text.len() as u32;
        let (w, h) = (n * 4 * cell + cell, 7 * cell);
        let (left, top) = (x0 + t, y0 + t);
        let right = x1.saturating_sub(t + w).max(left);
        let bottom = y1.saturating_sub(t + h).max(top);
        let place =
            |x: u32, y: u32| Label { index, x: x.min(iw.saturating_sub(w)), y: y.min(ih.saturating_sub(h)), w, h };
        let candidates = [place(left, top), place(right, top), place(left, bottom), place(right, bottom)];
        let label = candidates.iter().copied().find(|c| labels.iter().all(|l| !l.overlaps(c))).unwrap_or(candidates[0]);
        fill(img, label.x, label.y, label.x + w, label.y + h, LABEL_COLOR, LABEL_ALPHA);
        for (i, d) in text.bytes().enumerate() {
            let gx = label.x + cell + i as u32 * 4 * cell;
            for row in 0..5 {
                for col in 0..3 {
                    if glyph_on(d - b'0', col, row) {
                        let (px, py) = (gx + col * cell, label.y + cell + row * cell);
                        fill(img, px, py, px + cell, py + cell, [255, 255, 255], 255);
                    }
                }
            }
        }
        labels.push(label);
    }
    labels
}

/// Blends `color` at `alpha`/255 over the rectangle [x0, x1) × [y0, y1), clipped to the image.
fn fill(img: &mut RgbImage, x0: u32, y0: u32, x1: u32, y1: u32, color: [u8; 3], alpha: u32) {
    let (w, h) = img.dimensions();
    for y in y0.min(h)..y1.min(h) {
        for x in x0.min(w)..x1.min(w) {
            let p = img.get_pixel_mut(x, y);
            for (v, c) in p.0.iter_mut().zip(color) {
                *v = ((u32::from(c) * alpha + u32::from(*v) * (255 - alpha) + 127) / 255) as u8;
            }
        }
    }
}

// ---- the picture, when the elements cannot describe the screen ----------------------------------------------

/// What the answer says when the default leaves the picture out: why, and how to get it.
pub const LEFT_OUT: &str =
    "left out: the elements describe this screen; picture: true attaches it, android_screenshot for a close look";
/// From this share of the screen on, a region with no text or description (a photo, a canvas, an empty view)
/// needs the picture.
const UNLABELLED_SHARE: f64 = 0.10;
/// Views that draw their own content with no view tree under it (games, video, maps, camera previews): from this
/// share of the screen on, the picture.
const SURFACE_SHARE: f64 = 0.05;
const SURFACES: &[&str] =
    &["SurfaceView", "GLSurfaceView", "TextureView", "VideoView", "MapView", "PlayerView", "StyledPlayerView"];
/// Fewer elements with text or a description than this: the screen is mostly something else.
const FEW_LABELLED: usize = 3;

/// Why the elements cannot describe the screen (the picture is attached by default), or `None` when they can.
/// Conservative: anything the tree does not put into words — no tree or an empty one, the lock screen, a page not
/// read, few labels, a large region with no text or description, a drawing surface, a dialog without text.
#[allow(clippy::too_many_arguments)]
pub fn cannot_describe(
    elements: &[Element],
    shown: &dyn Fn(&Element) -> bool,
    cover: &super::tree::Cover,
    no_tree: bool,
    locked: bool,
    page: &Web,
    (sw, sh): (u32, u32),
) -> Option<String> {
    if no_tree {
        return Some("no UI tree".into());
    }
    if cover.state != super::tree::State::Ok {
        return Some(format!("the UI tree is {}", cover.state.as_str()));
    }
    if locked {
        return Some("the lock screen is showing".into());
    }
    if let Some(w) = page.to_json().filter(|w| w["state"] != "ok") {
        return Some(format!("the web page is not read ({})", w["state"].as_str().unwrap_or("?")));
    }
    let shown: Vec<&Element> = elements.iter().filter(|e| shown(e)).collect();
    let labelled = |e: &Element| !e.text.is_empty() || !e.content_desc.is_empty() || e.password;
    let n = shown.iter().filter(|e| labelled(e)).count();
    if n < FEW_LABELLED {
        return Some(format!("only {n} elements have text"));
    }
    let screen = f64::from(sw.max(1)) * f64::from(sh.max(1));
    let share = |b: [i32; 4]| {
        let w = (b[2].min(sw as i32) - b[0].max(0)).max(0);
        let h = (b[3].min(sh as i32) - b[1].max(0)).max(0);
        f64::from(w) * f64::from(h) / screen
    };
    // `o` lies within `e` (equal bounds: the later, deeper one within the earlier).
    let within = |o: &Element, e: &Element| {
        let (a, b) = (o.bounds, e.bounds);
        o.index != e.index
            && a[0] >= b[0]
            && a[1] >= b[1]
            && a[2] <= b[2]
            && a[3] <= b[3]
            && (a != b || o.index > e.index)
    };
    for e in shown.iter().filter(|e| !labelled(e)) {
        let part = share(e.bounds);
        let class = e.class.rsplit('.').next().unwrap_or(&e.class);
        if SURFACES.contains(&class) && part >= SURFACE_SHARE {
            return Some(format!("#{} {class} draws {:.0} % of the screen", e.index, part * 100.0));
        }
        if part >= UNLABELLED_SHARE && !shown.iter().any(|o| within(o, e)) {
            return Some(format!("#{} {class} covers {:.0} % of the screen with no text", e.index, part * 100.0));
        }
    }
    if let super::tree::Windows::All(windows) = &cover.windows {
        for (i, w) in windows.iter().enumerate().filter(|(_, w)| w.kind == "dialog") {
            let b = w.bounds;
            let inside = |e: &Element| {
                let [x, y] = e.center();
                e.window == Some(i) || (x >= b[0] && x < b[2] && y >= b[1] && y < b[3])
            };
            if !shown.iter().any(|e| labelled(e) && inside(e)) {
                return Some("a dialog without text".into());
            }
        }
    }
    None
}

// ---- the tool ----------------------------------------------------------------------------------------------------

fn element_schema() -> Value {
    let mut s = element::element_schema(true);
    if let Some(Value::String(d)) = s.get_mut("description") {
        d.push_str("; marked: has a numbered box in the image; source: \"web\" = read from the page (see web)");
    }
    s
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ObserveArgs {
    /// Numbered boxes on interactive elements
    #[serde(default = "yes")]
    marks: bool,
    /// Longest side in px (downscaled); 0 = full size
    #[schemars(range(min = 0, max = picture::MAX_SIDE_ARG))]
    #[serde(default = "picture::side_observe")]
    max_side: u32,
    #[schemars(range(min = 1, max = 100))]
    #[serde(default = "picture::quality_80")]
    quality: u8,
    /// Only the interactive elements
    #[serde(default)]
    only_interactive: bool,
    #[schemars(range(min = 1, max = 1000))]
    #[serde(default = "args::elements_300")]
    max_elements: u32,
    /// true: always; false: never; absent: when the elements cannot describe the screen
    picture: Option<bool>,
}

fn yes() -> bool {
    true
}

/// `web_content`: the operator's policy lets observe read web pages (`tools::web`).
pub fn tools(adb: &Arc<AdbBackend>, web_content: bool) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: "android_observe",
            title: "Observe the screen",
            description: "Numbered elements, foreground app, keyboard, lock state, observation_id for \
                          `element: {index, observation_id}` (300 s); a screenshot boxing the numbers when the \
                          elements cannot describe the screen (see `picture`).",
            input: args::schema::<ObserveArgs>(),
            output: json!({"type": "object", "properties": {
                    "observation_id": {"type": "string"},
                    "files": {"type": "array", "items": files::file_item_schema()},
                    "width": {"type": "integer"}, "height": {"type": "integer"},
                    "scale": {"type": "number", "description": "image px / device px"},
                    "screen_width": {"type": "integer"},
                    "screen_height": {"type": "integer"},
                    "orientation": {"type": "string", "enum": ["portrait", "landscape"]},
                    "rotation_degrees": {"type": "integer", "enum": [0, 90, 180, 270], "description": "Sizes, bounds and image are in this rotated space"},
                    "foreground_package": {"type": "string"}, "foreground_activity": {"type": "string"},
                    "keyboard_shown": {"type": "boolean"},
                    "screen_on": {"type": ["boolean", "null"], "description": "false: asleep (black picture)"},
                    "locked": {"type": ["boolean", "null"], "description": "Lock screen showing: android_unlock"},
                    "frame": {"type": "string", "enum": ["ok", "screen_off", "secure_window", "blank"]},
                    "frame_blank": {"type": "boolean", "description": "frame is secure_window or blank"},
                    "ui_available": {"type": "boolean", "description": "false: no UI tree (see ui_unavailable_reason)"},
                    "ui_unavailable_reason": {"type": "string"},
                    "tree": super::tree::schema(),
                    "scrollables": super::tree::scrollables_schema(),
                    "hint": {"type": "string"},
                    "picture": {"type": "string", "description": "attached: why; or left out"},
                    "count": {"type": "integer"}, "truncated": {"type": "boolean"},
                    "web": {"type": "object", "description": "A WebView's page: state ok (elements listed, source \
                            web), opaque (not debuggable), screen_off, failed or off, with reason; url, title"},
                    "elements": {"type": "array", "items": element_schema()}}}),
            side_effect: false,
            settles: false,
            deadline: Duration::from_secs(30),
        },
        adb,
        move |c| async move { observe(c, web_content).await },
    )]
}

async fn observe(c: Ctx, web_content: bool) -> Result<Value, ProtoError> {
    let a: ObserveArgs = c.parse()?;
    let (marks, only_interactive) = (a.marks, a.only_interactive);
    let max_side = a.max_side.min(picture::MAX_SIDE_ARG);
    let quality = a.quality.clamp(1, 100);
    let max = a.max_elements.max(1) as usize;
    let d = c.spec.deadline;

    // Everything at once: the capture, the dump and the small queries share nothing on the phone.
    let frame = async {
        let _permit = super::permits::captures().acquire(&c.device).await?;
        match capture(&c.adb, &c.device, DEFAULT_PATH, max_side, d).await {
            Ok(f) => Ok(f),
            Err(e) if e.code == ErrorCode::DeviceTimeout => Err(e),
            Err(e) => {
                tracing::debug!(error = %e, "framebuffer capture failed; falling back to raw screencap");
                capture(&c.adb, &c.device, CapturePath::Raw, max_side, d).await
            }
        }
    };
    // One round trip for the foreground (the section that prints it depends on the version) and the keyboard.
    let sdk = c.adb.info(&c.device).and_then(|i| i.sdk);
    let state_cmd = format!("{}; dumpsys input_method | grep mInputShown", formats::foreground_command(sdk));
    let state = c.adb.shell(&c.device, &state_cmd, false, d);
    let geometry = async { (c.adb.screen_size(&c.device).await, c.adb.rotation(&c.device).await.ok()) };
    // A look the agent asked for reads the phone's state (as android_device_status does, issue 48 item 7), in the
    // same join as the picture and the tree: the 1 s cache the input gate keeps said `locked: false` beside a tree
    // showing the lock screen when the phone locked within a second of the last read.
    c.adb.forget_screen_state(&c.device);
    let power = c.adb.screen_state(&c.device);
    // The picture never waits for the tree beyond uiautomator's own 10 s idle wait (plus transfer).
    // A page's content is read once the tree shows a WebView (nothing otherwise), while the picture is taken.
    let began = Instant::now();
    let dump = async {
        let dumped = dump::read(&c, d.min(OBSERVE_DUMP_DEADLINE)).await;
        let left = OBSERVE_TREE_AND_PAGE.saturating_sub(began.elapsed());
        let page = match &dumped {
            Ok(t) => web::read(&c, &t.elements, web_content, left).await,
            Err(_) => Web::NotWeb,
        };
        (dumped, page)
    };
    let (frame, (dumped, page), state, (size, rotation), power) = tokio::join!(frame, dump, state, geometry, power);
    let (frame, (nw, nh)) = (frame?, size?);
    let power = power.unwrap_or_default();
    // Without a tree the observation still has its picture: an agent can look, and act by coordinates.
    let (mut elements, mut cover, ui_unavailable) = match dumped {
        Ok(t) => (t.elements, t.cover, None),
        Err(e) => {
            tracing::debug!(device = %c.device, error = %e, "observe without a UI tree");
            let reason = format!("{}: {}", e.code.as_str(), e.message);
            (Vec::new(), super::tree::Cover::unavailable(dump::last_source(&c.device), reason.clone()), Some(reason))
        }
    };
    // The page's own elements replace the WebView's accessibility nodes (same links, less exact).
    let covered = page.covered(&elements);
    page.join(&mut elements);
    let shown = |e: &Element| !covered.contains(&e.index);
    let state = state.map(|o| o.stdout).unwrap_or_default();
    let landscape = rotation.is_some_and(|r| r % 2 == 1);
    let (screen_w, screen_h) = if landscape { (nh, nw) } else { (nw, nh) };

    let to_mark: Vec<(usize, [i32; 4])> = if marks {
        elements.iter().filter(|e| e.is_interactive() && shown(e)).map(|e| (e.index, e.bounds)).collect()
    } else {
        vec![]
    };
    // Whether the picture goes with the elements: asked for, or (by default) only when they cannot describe the
    // screen; a one-colour frame always gets its thumbnail (cheap, and `frame` says what it is) unless refused.
    let unreadable = match a.picture {
        Some(_) => None,
        None => cannot_describe(
            &elements,
            &shown,
            &cover,
            ui_unavailable.is_some(),
            power.is_locked(),
            &page,
            (screen_w, screen_h),
        ),
    };
    let wanted = a.picture.unwrap_or(unreadable.is_some());
    let refused = a.picture == Some(false);
    let meta = NewFile {
        channel_id: c.call.channel_id.clone(),
        filename: format!("observe-{}.jpg", crate::protocol::now_ms()),
        mime: "image/jpeg".into(),
    };
    let cache = c.files.clone();
    let (row, uniform) = tokio::task::spawn_blocking(move || {
        let uniform = frame.picture.uniform_colour();
        if !(wanted || uniform.is_some() && !refused) {
            return Ok::<_, ProtoError>((None, uniform));
        }
        let (fw, fh) = frame.picture.dimensions();
        // One colour: a thumbnail, no marks (the elements keep their bounds; `frame` says what the picture is).
        let side = if uniform.is_some() { picture::UNIFORM_SIDE.min(max_side) } else { max_side };
        let mut img = frame.picture.fit(side);
        let (iw, ih) = img.dimensions();
        if uniform.is_none() {
            // Element bounds are in the frame's pixel space (the current orientation).
            draw_marks(&mut img, &to_mark, f64::from(iw) / f64::from(fw), f64::from(ih) / f64::from(fh));
        }
        let (bytes, w, h) = encode(&img, Format::Jpeg { quality })?;
        let row = cache.store_bytes(&bytes, meta).map_err(|e| e.into_proto("the observation image"))?;
        Ok((Some((row, w, h)), uniform))
    })
    .await
    .map_err(|_| ProtoError::new(ErrorCode::Internal, "observation image encoding failed unexpectedly"))??;

    let picked: Vec<&Element> = elements
        .iter()
        .filter(|e| shown(e) && e.is_interesting() && (!only_interactive || e.is_interactive()))
        .collect();
    let truncated = picked.len() > max;
    let listed: Vec<Value> = picked
        .iter()
        .take(max)
        .map(|e| {
            let mut v = e.to_json();
            if marks && e.is_interactive() && uniform.is_none() && row.is_some() {
                v["marked"] = json!(true);
            }
            v
        })
        .collect();
    let shown_all: Vec<Element> = elements.iter().filter(|e| shown(e)).cloned().collect();
    let scrollables = super::tree::scrollables(&shown_all);
    let id = observations::keep(&c.call.channel_id, &c.device, elements);
    let mut out = json!({
        "observation_id": id,
        "screen_width": screen_w, "screen_height": screen_h,
        "orientation": if landscape { "landscape" } else { "portrait" },
        "rotation_degrees": u16::from(rotation.unwrap_or(0)) * 90,
        "keyboard_shown": formats::keyboard_shown(&state).unwrap_or(false),
        "screen_on": power.screen_on, "locked": power.locked,
        "ui_available": ui_unavailable.is_none(),
        "count": listed.len(), "truncated": truncated, "elements": listed,
    });
    match &row {
        Some((row, w, h)) => {
            let scale = f64::from(*w.max(h)) / f64::from(screen_w.max(screen_h).max(1));
            out["files"] = json!([files::describe(row)]);
            out["width"] = json!(w);
            out["height"] = json!(h);
            out["scale"] = json!((scale * 10_000.0).round() / 10_000.0);
            if let Some(why) = &unreadable {
                out["picture"] = json!(format!("attached: {why}"));
            }
        }
        None if refused => out["picture"] = json!("left out (picture: false)"),
        None => out["picture"] = json!(LEFT_OUT),
    }
    let power = if uniform.is_some() {
        // Asleep since the last read, or a blank frame? Ask afresh (see picture::screen_on_for).
        c.adb.forget_screen_state(&c.device);
        c.adb.screen_state(&c.device).await.unwrap_or(power)
    } else {
        power
    };
    out["screen_on"] = json!(power.screen_on);
    out["locked"] = json!(power.locked);
    cover.explain_empty(power.screen_on, power.locked);
    out["tree"] = cover.to_json();
    if !scrollables.is_empty() {
        out["scrollables"] = json!(scrollables);
    }
    let mut hints = Vec::new();
    let frame = picture::frame_verdict(&c, uniform, power.screen_on).await;
    out["frame"] = json!(frame.as_str());
    out["frame_blank"] = json!(frame.blank());
    if frame.blank() {
        hints.extend(frame.hint());
    }
    if power.asleep() {
        hints.push("the screen is off (black picture): input tools wake it, or call android_wake".to_owned());
    }
    if power.is_locked() {
        hints.push("the lock screen is showing: call android_unlock before acting".to_owned());
    }
    if let Some(w) = page.to_json() {
        if w["state"] == "opaque" {
            hints.push("the WebView's page is opaque (not debuggable): act by coordinates on the picture".into());
        }
        if w["state"] == "unverified" {
            hints.push(
                "the page's DevTools socket is not proven to be the app's: act by coordinates on the picture".into(),
            );
        }
        out["web"] = w;
    }
    if let Some(reason) = ui_unavailable {
        hints.push("no UI tree: act by coordinates on the picture; element targets fail with ui_unavailable".into());
        out["ui_unavailable_reason"] = json!(reason);
    } else if cover.state == super::tree::State::Empty {
        hints.push(format!("the UI tree is empty: {}", cover.reason.as_deref().unwrap_or_default()));
    }
    if !hints.is_empty() {
        out["hint"] = json!(hints.join("; "));
    }
    if let Some((pkg, act)) = formats::foreground(&state) {
        out["foreground_package"] = json!(pkg);
        out["foreground_activity"] = json!(act);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use image::Rgb;

    fn luma(p: &Rgb<u8>) -> f64 {
        0.299 * f64::from(p.0[0]) + 0.587 * f64::from(p.0[1]) + 0.114 * f64::from(p.0[2])
    }

    /// The marks survive JPEG: decoded pixels show the box on every edge of the element (and not inside it), and
    /// the label's digits read back as the element's index, on a light and on a dark background.
    #[test]
    fn marks_are_boxes_at_the_right_places_with_readable_labels() {
        for bg in [[240u8, 240, 240], [20, 20, 30]] {
            // A 1080×2400 "screen" downscaled to 576×1280 as observe does by default.
            let mut img = crate::pixels::downscale::fit(RgbImage::from_pixel(1080, 2400, Rgb(bg)), 1280);
            let s = 576.0 / 1080.0;
            let elements = [(7usize, [337, 900, 742, 1056]), (42usize, [100, 1500, 980, 1700])];
            let labels = draw_marks(&mut img, &elements, s, s);
            let (jpeg, _, _) = encode(&img, Format::Jpeg { quality: 80 }).unwrap();
            let back = image::load_from_memory(&jpeg).unwrap().into_rgb8();
            let (lw, cell) = mark_metrics(1280);
            let near = |p: &Rgb<u8>, c: [u8; 3]| (0..3).all(|i| (i32::from(p.0[i]) - i32::from(c[i])).abs() < 60);
            for (k, &(index, b)) in elements.iter().enumerate() {
                let m = |v: i32| (f64::from(v) * s).round() as u32;
                let (x0, y0, x1, y1) = (m(b[0]), m(b[1]), m(b[2]), m(b[3]));
                let (mx, my) = ((x0 + x1) / 2, (y0 + y1) / 2);
                let mid = lw / 2;
                // Box pixels in the middle of each edge (away from the label corner).
                for (x, y) in [(mx, y0 + mid), (mx, y1 - 1 - mid), (x0 + mid, my), (x1 - 1 - mid, my)] {
                    let p = back.get_pixel(x, y);
                    assert!(near(p, MARK_COLOR), "element {index}: ({x},{y}) = {p:?} is not the mark colour");
                }
                // Just outside the box and well inside it: the background, untouched.
                for (x, y) in [(mx, y0.saturating_sub(4)), (mx, y1 + 3), (mx, my + 8)] {
                    assert!(near(back.get_pixel(x, y), bg), "element {index}: ({x},{y}) should be background");
                }
                // The label is at the box's top-left corner and its digits read back.
                let l = labels[k];
                assert_eq!((l.index, l.x, l.y), (index, x0 + lw, y0 + lw));
                for (i, d) in index.to_string().bytes().enumerate() {
                    let gx = l.x + cell + i as u32 * 4 * cell;
                    for row in 0..5 {
                        for col in 0..3 {
                            let p = back.get_pixel(gx + col * cell + cell / 2, l.y + cell + row * cell + cell / 2);
                            let lit = luma(p) > 170.0;
                            assert_eq!(
                                lit,
                                glyph_on(d - b'0', col, row),
                                "digit {} cell ({col},{row}): {p:?}",
                                d - b'0'
                            );
                        }
                    }
                }
            }
        }
    }

    /// The default picture's rule on its own (the sim has no dialog without text; tests/observe.rs drives the
    /// other cases end to end): a floating dialog with no text needs the picture, one that says something does not.
    #[test]
    fn a_dialog_without_text_needs_the_picture() {
        use crate::tools::tree::{Cover, State, Window, Windows};
        let el = |i: usize, class: &str, text: &str, b: [i32; 4], w: usize| {
            let mut e = Element::new(class, "com.x", b);
            (e.index, e.text, e.window) = (i, text.to_owned(), Some(w));
            e
        };
        let window = |kind: &str, bounds: [i32; 4]| Window {
            kind: kind.into(),
            package: "com.x".into(),
            title: String::new(),
            focused: false,
            layer: 0,
            bounds,
            empty: false,
        };
        let windows = vec![window("dialog", [100, 800, 980, 1600]), window("application", [0, 0, 1080, 2400])];
        let cover = Cover { source: "helper", windows: Windows::All(windows), state: State::Ok, reason: None };
        let mut elements = vec![
            el(0, "FrameLayout", "", [100, 800, 980, 1600], 0),
            el(1, "View", "", [150, 850, 930, 1000], 0),
            el(2, "TextView", "Inbox", [0, 100, 1080, 200], 1),
            el(3, "TextView", "Alice", [0, 300, 1080, 400], 1),
            el(4, "TextView", "Bob", [0, 500, 1080, 600], 1),
        ];
        let all = |_: &Element| true;
        let why = cannot_describe(&elements, &all, &cover, false, false, &Web::NotWeb, (1080, 2400));
        assert_eq!(why.as_deref(), Some("a dialog without text"));
        elements.push(el(5, "Button", "Allow", [150, 1400, 500, 1500], 0));
        assert_eq!(cannot_describe(&elements, &all, &cover, false, false, &Web::NotWeb, (1080, 2400)), None);
        // A small unlabelled view (an icon) is not a region the picture must show.
        elements.push(el(6, "ImageView", "", [0, 2200, 100, 2300], 1));
        assert_eq!(cannot_describe(&elements, &all, &cover, false, false, &Web::NotWeb, (1080, 2400)), None);
    }

    #[test]
    fn labels_of_nested_elements_do_not_cover_each_other() {
        // A list container and its first row share the top-left corner.
        let mut img = RgbImage::from_pixel(540, 1200, Rgb([255, 255, 255]));
        let labels = draw_marks(&mut img, &[(3, [0, 300, 540, 1140]), (4, [0, 300, 540, 372])], 1.0, 1.0);
        assert_eq!(labels.len(), 2);
        assert!(!labels[0].overlaps(&labels[1]), "{labels:?}");
    }
}
