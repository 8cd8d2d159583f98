//! What a UI tree covers (issue 33 item 2): every result that carries elements (`android_ui_dump`,
//! `android_observe`, `android_ui_wait`, an action's `effect.tree`, an error's candidates) says who read the tree,
//! which windows it holds and whether it is worth anything, in one shape built here:
//!
//! `tree: {source, windows, state, reason?}`
//!
//! - `source`: `helper` (the phone helper's `tree`: every window, no idle wait) or `uiautomator` (`uiautomator
//!   dump`: the active window only, after an idle wait).
//! - `windows`: the helper's windows, top of the z-order first, each `{type, package, title?, focused?, bounds}`;
//!   or `"focused"` for uiautomator, which never says what else is on screen (a keyboard, a dialog or the app
//!   behind may be missing, or be all there is). `type` is the helper's `AccessibilityWindowInfo` type
//!   (`application`, `input_method`, `system`, `accessibility_overlay`, …) except `dialog`: an application window
//!   that floats over another application window without covering the screen — a runtime-permission prompt, an
//!   app's own dialog. Android has no window type for it; the place says it.
//! - `state`: `ok` (elements an agent can name or act on), `empty` (a tree, but nothing in it to act on: the reason
//!   says what the data shows — a window still loading, a canvas-drawn screen, the screen off, the lock screen),
//!   `unavailable` (no tree could be read; the reason is the phone's or the helper's).
//!
//! An empty element list is never presented as success without `state: empty` beside it.

use serde_json::{json, Value};

use super::element::Element;

/// Longest window title or package kept, in characters (the phone's strings; a hostile app chooses its title).
const WINDOW_TEXT_MAX: usize = 100;

/// One window of the helper's tree (`<window>` of device-profile/phone-helper.md §7).
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    /// `application`, `input_method`, `system`, …, or `dialog` (see the module docs).
    pub kind: String,
    pub package: String,
    pub title: String,
    pub focused: bool,
    pub layer: i64,
    pub bounds: [i32; 4],
    /// The system gave no root node for it (`empty="true"`).
    pub empty: bool,
}

impl Window {
    /// A `<window>`'s attributes, read with `attr` (missing: empty). The phone's strings are cleaned and bounded.
    pub fn from_attrs(attr: impl Fn(&str) -> Option<String>, bounds: [i32; 4]) -> Window {
        let text = |k: &str| crate::device::text::phone_text(&attr(k).unwrap_or_default(), WINDOW_TEXT_MAX);
        let kind = match attr("type").as_deref() {
            Some(
                t @ ("application"
                | "input_method"
                | "system"
                | "accessibility_overlay"
                | "split_screen_divider"
                | "magnification_overlay"),
            ) => t.to_owned(),
            _ => "unknown".to_owned(),
        };
        Window {
            kind,
            package: text("package"),
            title: text("title"),
            focused: attr("focused").as_deref() == Some("true"),
            layer: attr("layer").and_then(|l| l.parse().ok()).unwrap_or(0),
            bounds,
            empty: attr("empty").as_deref() == Some("true"),
        }
    }

    fn area(&self) -> i64 {
        let [l, t, r, b] = self.bounds;
        i64::from((r - l).max(0)) * i64::from((b - t).max(0))
    }

    fn to_json(&self) -> Value {
        let mut v = json!({"type": self.kind, "package": self.package, "bounds": self.bounds});
        if !self.title.is_empty() {
            v["title"] = json!(self.title);
        }
        if self.focused {
            v["focused"] = json!(true);
        }
        if self.empty {
            v["empty"] = json!(true);
        }
        v
    }
}

/// Names `dialog` the application windows that float over another application window (listed after them, top
/// first) and cover less than the largest window: what a permission prompt or an app's dialog is.
pub fn name_dialogs(windows: &mut [Window]) {
    let largest = windows.iter().map(Window::area).max().unwrap_or(0);
    for i in 0..windows.len() {
        let below_is_app = windows[i + 1..].iter().any(|w| w.kind == "application");
        if windows[i].kind == "application" && below_is_app && windows[i].area() < largest {
            windows[i].kind = "dialog".to_owned();
        }
    }
}

/// Which windows a tree holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Windows {
    /// The helper's: every window the system reported, top first.
    All(Vec<Window>),
    /// uiautomator's: the active window only, and nothing about the others.
    Focused,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Ok,
    Empty,
    Unavailable,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ok => "ok",
            State::Empty => "empty",
            State::Unavailable => "unavailable",
        }
    }
}

/// What one tree read covers (the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Cover {
    pub source: &'static str,
    pub windows: Windows,
    pub state: State,
    pub reason: Option<String>,
}

impl Cover {
    /// The cover of a tree that was read: `ok` when an element has something to name or act on, else `empty` with
    /// what the tree itself shows.
    pub fn of(source: &'static str, windows: Windows, elements: &[Element]) -> Cover {
        if let Some(reason) = focused_empty(&windows, elements) {
            return Cover { source, windows, state: State::Empty, reason: Some(reason) };
        }
        if elements.iter().any(Element::is_interesting) {
            return Cover { source, windows, state: State::Ok, reason: None };
        }
        let reason = empty_reason(&windows, elements);
        Cover { source, windows, state: State::Empty, reason: Some(reason) }
    }

    /// No tree could be read (`reason`: why, as the phone or the helper said it).
    pub fn unavailable(source: &'static str, reason: impl Into<String>) -> Cover {
        Cover { source, windows: Windows::Focused, state: State::Unavailable, reason: Some(reason.into()) }
    }

    /// An empty tree's reason made exact by what else is known of the screen (observe reads it anyway): off, the
    /// lock screen, a secure window. Nothing changes for a tree that is `ok` or `unavailable`.
    pub fn explain_empty(&mut self, screen_on: Option<bool>, locked: Option<bool>) {
        if self.state != State::Empty {
            return;
        }
        if screen_on == Some(false) {
            self.reason = Some("the screen is off: android_wake (or any input tool) turns it on".into());
        } else if locked == Some(true) {
            self.reason = Some("the lock screen is showing: android_unlock, then observe again".into());
        }
    }

    pub fn to_json(&self) -> Value {
        let windows = match &self.windows {
            Windows::All(ws) => Value::Array(ws.iter().map(Window::to_json).collect()),
            Windows::Focused => json!("focused"),
        };
        let mut v = json!({"source": self.source, "windows": windows, "state": self.state.as_str()});
        if let Some(r) = &self.reason {
            v["reason"] = json!(r);
        }
        v
    }
}

/// The helper's tree of several windows whose focused window (else its first application window) has nothing to
/// name or act on while other windows have: the app an agent means is not there yet, whatever the keyboard or the
/// status bar hold (issue 49 item 7). Why, or `None`.
fn focused_empty(windows: &Windows, elements: &[Element]) -> Option<String> {
    let Windows::All(ws) = windows else { return None };
    if ws.len() < 2 {
        return None;
    }
    let at = ws.iter().position(|w| w.focused).or_else(|| ws.iter().position(|w| w.kind == "application"))?;
    let w = &ws[at];
    let has = elements.iter().any(|e| e.window == Some(at) && e.is_interesting());
    let others = elements.iter().filter(|e| e.window != Some(at) && e.is_interesting()).count();
    if has || others == 0 {
        return None;
    }
    let what = if w.empty { "has no content yet" } else { "holds nothing to name or act on" };
    Some(format!(
        "the focused {} window of {:?} {what} (the {others} elements listed are other windows'); the app may still \
         be loading or the screen changing: observe again in a moment, or use the screenshot",
        w.kind, w.package
    ))
}

/// Off-screen hints of every vertical scrollable (issue 49 item 4): `{index, more_above, more_below, above?,
/// below?}` — a row the tree holds cut by the container's edge (shorter than its tallest row, or reaching past
/// the edge) says there is more that way, and its label is the first of what lies beyond. A list whose rows end
/// exactly at an edge says nothing that way (the tree cannot tell).
pub fn scrollables(elements: &[Element]) -> Vec<Value> {
    let mut out = Vec::new();
    for s in elements.iter().filter(|e| e.scrollable && !e.web) {
        let b = s.bounds;
        let rows: Vec<&Element> = elements
            .iter()
            .filter(|e| e.index > s.index && !e.scrollable && e.window == s.window && e.package == s.package)
            .filter(|e| e.is_interesting() && e.bounds[0] >= b[0] && e.bounds[2] <= b[2])
            .filter(|e| e.bounds[3] > b[1] && e.bounds[1] < b[3])
            .collect();
        let tallest = rows.iter().map(|e| e.bounds[3] - e.bounds[1]).max().unwrap_or(0);
        if rows.len() < 2 || tallest <= 0 {
            continue;
        }
        let label = |e: &&Element| {
            let t = if e.password {
                ""
            } else if e.text.is_empty() {
                e.content_desc.as_str()
            } else {
                e.text.as_str()
            };
            (!t.is_empty()).then(|| t.chars().take(60).collect::<String>())
        };
        let cut = |e: &&&Element| e.bounds[3] - e.bounds[1] < tallest;
        let above: Vec<String> =
            rows.iter().filter(|e| e.bounds[1] < b[1] || (e.bounds[1] == b[1] && cut(e))).filter_map(label).collect();
        let below: Vec<String> =
            rows.iter().filter(|e| e.bounds[3] > b[3] || (e.bounds[3] == b[3] && cut(e))).filter_map(label).collect();
        let mut v = json!({"index": s.index, "more_above": !above.is_empty(), "more_below": !below.is_empty()});
        if !above.is_empty() {
            v["above"] = json!(above.into_iter().take(3).collect::<Vec<_>>());
        }
        if !below.is_empty() {
            v["below"] = json!(below.into_iter().take(3).collect::<Vec<_>>());
        }
        out.push(v);
    }
    out
}

/// Why a tree that was read holds nothing to act on, from the tree alone.
fn empty_reason(windows: &Windows, elements: &[Element]) -> String {
    const CANVAS: &str = "nothing in it has text, a description, an id or an action: the app may still be loading \
                          (observe again in a moment), or it draws its screen itself (a game, a map, a video: use \
                          the screenshot and act by coordinates)";
    const LOADING: &str = "the app may still be loading or the screen changing: observe again in a moment, or use \
                           the screenshot";
    match windows {
        Windows::All(ws) if ws.is_empty() => format!("the system reported no window; {LOADING}"),
        Windows::All(ws) => match ws.iter().find(|w| w.focused).or(ws.first()) {
            Some(w) if w.empty => {
                format!("the {} window of {:?} has no content yet; {LOADING}", w.kind, w.package)
            }
            _ if elements.is_empty() => format!("the windows have no views; {LOADING}"),
            _ => format!("the windows' views are layout only: {CANVAS}"),
        },
        Windows::Focused if elements.is_empty() => {
            format!("uiautomator gave the focused window without a view; {LOADING}")
        }
        Windows::Focused => format!("uiautomator's focused window is layout only: {CANVAS}"),
    }
}

/// The `tree` schema of the results that carry one (prose: the card pays for nested schemas in tokens).
pub fn schema() -> Value {
    json!({"type": "object", "description": "What elements cover: source, windows (or \"focused\"), state \
        ok|empty|unavailable, reason"})
}

/// The `scrollables` schema of observe and ui_dump (prose, as [`schema`]).
pub fn scrollables_schema() -> Value {
    json!({"type": "array", "description": "Per list: index, more_above, more_below, above/below (labels)"})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(kind: &str, package: &str, bounds: [i32; 4], focused: bool) -> Window {
        Window {
            kind: kind.into(),
            package: package.into(),
            title: String::new(),
            focused,
            layer: 0,
            bounds,
            empty: false,
        }
    }

    #[test]
    fn a_floating_application_window_over_the_app_is_a_dialog() {
        let mut ws = vec![
            window("input_method", "com.google.android.inputmethod.latin", [0, 1600, 1080, 2400], false),
            window("application", "com.google.android.permissioncontroller", [72, 900, 1008, 1500], true),
            window("application", "com.example", [0, 0, 1080, 2400], false),
        ];
        name_dialogs(&mut ws);
        let kinds: Vec<&str> = ws.iter().map(|w| w.kind.as_str()).collect();
        assert_eq!(kinds, ["input_method", "dialog", "application"]);
        // A full-screen app alone, or a split-screen pair side by side, is no dialog.
        let mut alone = vec![window("application", "com.example", [0, 0, 1080, 2400], true)];
        name_dialogs(&mut alone);
        assert_eq!(alone[0].kind, "application");
    }

    #[test]
    fn an_empty_tree_says_why_and_never_reads_as_ok() {
        let c = Cover::of("uiautomator", Windows::Focused, &[]);
        assert_eq!(c.state, State::Empty);
        assert!(c.reason.as_deref().unwrap().contains("loading"), "{c:?}");
        let mut w = window("application", "com.example", [0, 0, 1080, 2400], true);
        w.empty = true;
        let c = Cover::of("helper", Windows::All(vec![w]), &[]);
        assert!(c.reason.as_deref().unwrap().contains("\"com.example\" has no content yet"), "{c:?}");
        let mut off = c.clone();
        off.explain_empty(Some(false), None);
        assert!(off.reason.as_deref().unwrap().contains("screen is off"), "{off:?}");
        let j = Cover::unavailable("uiautomator", "never idle").to_json();
        assert_eq!(
            j,
            json!({"source": "uiautomator", "windows": "focused", "state": "unavailable", "reason": "never idle"})
        );
    }

    #[test]
    fn an_empty_focused_window_is_empty_whatever_the_keyboard_holds() {
        let ws = vec![
            window("input_method", "kbd", [0, 1600, 1080, 2400], false),
            window("application", "com.example", [0, 0, 1080, 2400], true),
        ];
        let key = Element { window: Some(0), clickable: true, ..Element::new("Key", "kbd", [0, 1600, 100, 1700]) };
        let c = Cover::of("helper", Windows::All(ws.clone()), std::slice::from_ref(&key));
        assert_eq!(c.state, State::Empty, "{c:?}");
        assert!(c.reason.as_deref().unwrap().contains("focused application window of \"com.example\""), "{c:?}");
        let app = Element { window: Some(1), text: "Hi".into(), ..Element::new("T", "com.example", [0, 0, 9, 9]) };
        assert_eq!(Cover::of("helper", Windows::All(ws), &[key, app]).state, State::Ok);
    }

    #[test]
    fn a_list_cut_at_its_edge_says_more_is_there_and_what() {
        let list = Element { scrollable: true, ..Element::new("RecyclerView", "p", [0, 100, 500, 450]) };
        let row = |i: usize, text: &str, t: i32, b: i32| Element {
            index: i,
            text: text.into(),
            ..Element::new("TextView", "p", [0, t, 500, b])
        };
        let els =
            vec![list, row(1, "A", 100, 200), row(2, "B", 200, 300), row(3, "C", 300, 400), row(4, "D", 400, 450)];
        let s = scrollables(&els);
        assert_eq!(s, vec![json!({"index": 0, "more_above": false, "more_below": true, "below": ["D"]})]);
    }

    #[test]
    fn a_hostile_title_is_cleaned_and_bounded() {
        let long = format!("\u{202e}{}\n", "x".repeat(500));
        let w = Window::from_attrs(
            |k| match k {
                "title" => Some(long.clone()),
                "type" => Some("<script>".into()),
                _ => None,
            },
            [0; 4],
        );
        assert_eq!(w.title.chars().count(), WINDOW_TEXT_MAX);
        assert!(!w.title.contains('\u{202e}'));
        assert_eq!(w.kind, "unknown");
    }
}
