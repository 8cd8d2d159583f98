//! What an action changed in the UI tree: the elements that appeared, disappeared or changed between a tree read
//! before the action and one read after it (issue 33). No peer reports this (Google's own CLI dropped its
//! `layout --diff`); an agent otherwise observes again and compares by eye.
//!
//! [`read`] and [`after`] are the reads around the action (`effect_tree`, wired by `device.rs`); the rest is pure:
//! two element lists in, a bounded delta out. Only elements an agent can name count (`is_interesting`:
//! text, description, resource id, or interactive), so a layout container that moved by a pixel is no news.
//! Matching is by identity first, then by place, so a counter whose text changed is one *changed* element, not a
//! disappearance and an appearance:
//!
//! 1. the same element unchanged (class, resource id, description, text, bounds all equal);
//! 2. the same class, resource id and text or description anywhere (it moved; nearest first);
//! 3. the same resource id and class at the same bounds (its text or state changed);
//! 4. the same resource id and class anywhere (it moved; nearest first);
//! 5. no resource id: the same class at the same bounds;
//! 6. no resource id: the same class and text or description anywhere (it moved; nearest first).
//!
//! Never across packages: an element of another app is another element. Issue 49 item 3, effects that read like a
//! diff: when rows matched by rule 2 moved by one offset inside a scrollable container, the list scrolled — inside
//! it rules 3–6 are off (the row now at an old row's place, or with its id, is another row, not the old one
//! "changed"), the rows that only moved are no news, and the result says `scrolled: {by, out}` (the labels of the
//! rows that scrolled out) with the rows that scrolled in as `appeared`. When the package in front changed
//! (`foreground: {was, now}`), what went is the old screen: `counts.disappeared` says how many, none is listed.
//!
//! What is left is gone (before) or new (after). A changed element lists what it was for each of `text`,
//! `content_desc`, `checked`, `enabled`, `focused`, `selected`, `bounds` that differs — a password field's text
//! never (its `to_json` hides it, and so does `was`).

use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::context::Ctx;
use super::dump::{self, Tree};
use super::element::Element;
use super::observations;
use super::tree::Cover;

/// Bound of one tree read around an action: longer than uiautomator's own 10 s idle wait, so a screen that never
/// idles ends in its real cause.
const READ_LIMIT: Duration = Duration::from_secs(14);

/// How the trees around an action are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `effect_tree: true`: any way the phone can (the phone helper, else `uiautomator dump`, a second or more on
    /// real phones); a failure is reported.
    Asked,
    /// Not asked, and the phone helper reads trees (tens of ms): through the helper only. When it cannot give one
    /// (busy, gone), there is no `effect.tree` rather than two uiautomator dumps nobody asked for.
    Cheap,
}

/// Why a cheap read gave nothing (not shown: no `effect.tree` then).
const NOT_CHEAP: &str = "the phone helper did not give the tree";

/// The tree before the action, and what reading it cost.
pub struct TreeBefore(Result<Tree, String>, Duration, Mode);

async fn read_tree(c: &Ctx, mode: Mode) -> Result<Tree, String> {
    match mode {
        Mode::Asked => dump::read(c, READ_LIMIT).await.map_err(|e| e.message),
        Mode::Cheap => match dump::helper_tree(&c.adb, &c.device, READ_LIMIT).await {
            Ok(Some(t)) => Ok(t),
            Ok(None) => Err(NOT_CHEAP.to_owned()),
            Err(e) => Err(e.message),
        },
    }
}

/// Reads the tree before the action (alongside settle's frame, before the input).
pub async fn read(c: &Ctx, mode: Mode) -> TreeBefore {
    let t = Instant::now();
    let r = read_tree(c, mode).await;
    TreeBefore(r, t.elapsed(), mode)
}

/// Reads the tree after the action (once settled) and returns `effect.tree`: the delta, its counts, the
/// observation its elements belong to (so `element: {index, observation_id}` acts on them), what the after-tree
/// covers (`tools::tree`: source, windows, state) and `ms`, what the two reads cost. A read that failed gives
/// `state: unavailable` with the reason — never an empty delta that would read as "nothing changed"; a cheap read
/// the helper could not give, nothing (`None`).
pub async fn after(c: &Ctx, before: TreeBefore) -> Option<Value> {
    let TreeBefore(before, spent, mode) = before;
    let t = Instant::now();
    let after = match &before {
        // A cheap read that already failed is not tried again after the action.
        Err(e) if mode == Mode::Cheap && e == NOT_CHEAP => return None,
        _ => read_tree(c, mode).await,
    };
    let ms = (spent + t.elapsed()).as_millis() as u64;
    match (before, after) {
        (Ok(before), Ok(after)) => {
            let d = diff(&before.elements, &after.elements);
            let fg = (foreground(&before), foreground(&after));
            let switched = match &fg {
                (Some(b), Some(a)) if b != a => Some((b.clone(), a.clone())),
                _ => None,
            };
            let mut v = to_json(&before.elements, &after.elements, &d);
            if let (Some((was, now)), Value::Object(m)) = (switched, &mut v) {
                // A new screen: what went is the old app's whole screen, a count is all an agent needs of it.
                m.remove("disappeared");
                m.insert("foreground".into(), json!({"was": was, "now": now}));
            }
            if let Some(w) = super::web::from_tree(&after.elements) {
                v["web"] = w;
            }
            if let (Value::Object(m), Value::Object(cover)) = (&mut v, after.cover.to_json()) {
                m.extend(cover);
            }
            let id = observations::keep(&c.call.channel_id, &c.device, after.elements);
            v["observation_id"] = json!(id);
            v["ms"] = json!(ms);
            Some(v)
        }
        (_, Err(e)) if mode == Mode::Cheap && e == NOT_CHEAP => None,
        (Err(e), _) | (_, Err(e)) => {
            let source = if mode == Mode::Cheap { "helper" } else { dump::last_source(&c.device) };
            let mut v = Cover::unavailable(source, e).to_json();
            v["ms"] = json!(ms);
            Some(v)
        }
    }
}

/// The package in front in a tree: the focused window's where the helper names windows (else the first
/// application window's), otherwise the package most of the elements an agent can name belong to.
pub fn foreground(t: &Tree) -> Option<String> {
    if let super::tree::Windows::All(ws) = &t.cover.windows {
        let w = ws.iter().find(|w| w.focused).or_else(|| ws.iter().find(|w| w.kind == "application"));
        if let Some(w) = w.filter(|w| !w.package.is_empty()) {
            return Some(w.package.clone());
        }
    }
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for e in t.elements.iter().filter(|e| e.is_interesting() && !e.package.is_empty()) {
        match counts.iter_mut().find(|(p, _)| *p == e.package) {
            Some((_, n)) => *n += 1,
            None => counts.push((&e.package, 1)),
        }
    }
    counts.into_iter().rev().max_by_key(|(_, n)| *n).map(|(p, _)| p.to_owned())
}

/// Most elements listed per kind; the counts say how many there were.
pub const DELTA_MAX: usize = 20;

/// A delta between two trees: indices into `before` and `after`.
#[derive(Debug, Default, PartialEq)]
pub struct Delta {
    pub appeared: Vec<usize>,
    pub disappeared: Vec<usize>,
    /// (before, after) pairs whose attributes differ.
    pub changed: Vec<(usize, usize)>,
    /// A list scrolled: by how much its rows moved (`[dx, dy]`, screen px) and the list's bounds; `appeared` then
    /// holds the rows that scrolled in, `disappeared` the ones that scrolled out (inside the list).
    pub scrolled: Option<([i32; 2], [i32; 4])>,
}

impl Delta {
    pub fn is_empty(&self) -> bool {
        self.appeared.is_empty() && self.disappeared.is_empty() && self.changed.is_empty()
    }
}

fn contains(outer: &[i32; 4], e: &Element) -> bool {
    let [x, y] = e.center();
    x >= outer[0] && x < outer[2] && y >= outer[1] && y < outer[3]
}

/// A scroll between the two trees: the offset most of the rows that kept their text moved by (at least two, all
/// inside one scrollable container of `before`), and that container's bounds.
fn scroll_of(before: &[Element], after: &[Element], pairs: &[(usize, usize)]) -> Option<([i32; 2], [i32; 4])> {
    let mut offsets: Vec<([i32; 2], usize)> = Vec::new();
    for &(i, j) in pairs {
        let (b, a) = (before[i].bounds, after[j].bounds);
        // The top-left corner moves with a row unless the row is clipped there; the bottom-right otherwise.
        let (tl, br) = ([a[0] - b[0], a[1] - b[1]], [a[2] - b[2], a[3] - b[3]]);
        for d in if tl == br { vec![tl] } else { vec![tl, br] } {
            if d != [0, 0] {
                match offsets.iter_mut().find(|(o, _)| *o == d) {
                    Some((_, n)) => *n += 1,
                    None => offsets.push((d, 1)),
                }
            }
        }
    }
    let (by, n) = offsets.into_iter().max_by_key(|(_, n)| *n)?;
    if n < 2 {
        return None;
    }
    let moved = pairs.iter().find(|&&(i, j)| {
        let (b, a) = (before[i].bounds, after[j].bounds);
        [a[0] - b[0], a[1] - b[1]] == by || [a[2] - b[2], a[3] - b[3]] == by
    })?;
    let row = &before[moved.0];
    let list = before
        .iter()
        .filter(|e| e.scrollable && e.package == row.package && contains(&e.bounds, row))
        .min_by_key(|e| i64::from(e.bounds[2] - e.bounds[0]) * i64::from(e.bounds[3] - e.bounds[1]))?;
    Some((by, list.bounds))
}

fn same_attrs(a: &Element, b: &Element) -> bool {
    a.text == b.text
        && a.content_desc == b.content_desc
        && a.checked == b.checked
        && a.enabled == b.enabled
        && a.focused == b.focused
        && a.selected == b.selected
        && a.bounds == b.bounds
}

fn distance(a: &Element, b: &Element) -> i64 {
    let ([ax, ay], [bx, by]) = (a.center(), b.center());
    i64::from(ax - bx).abs() + i64::from(ay - by).abs()
}

/// The delta from `before` to `after` (see the module docs for the matching rules).
pub fn diff(before: &[Element], after: &[Element]) -> Delta {
    let b: Vec<usize> = (0..before.len()).filter(|&i| before[i].is_interesting()).collect();
    let a: Vec<usize> = (0..after.len()).filter(|&i| after[i].is_interesting()).collect();
    let mut used_b = vec![false; before.len()];
    let mut used_a = vec![false; after.len()];
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    // One pass per rule: each takes, for every unmatched before-element in document order, the nearest unmatched
    // after-element the rule accepts. An element of another app is never the same element.
    type Rule = fn(&Element, &Element) -> bool;
    let rules: [Rule; 6] = [
        |x, y| {
            x.class == y.class
                && x.resource_id == y.resource_id
                && x.content_desc == y.content_desc
                && x.text == y.text
                && x.bounds == y.bounds
        },
        // The same label and id anywhere: a row that moved (a scroll) keeps its text, whatever row now sits where
        // it was (a recycled view).
        |x, y| {
            x.class == y.class
                && x.resource_id == y.resource_id
                && ((!x.text.is_empty() && x.text == y.text)
                    || (!x.content_desc.is_empty() && x.content_desc == y.content_desc))
        },
        |x, y| {
            !x.resource_id.is_empty() && x.resource_id == y.resource_id && x.class == y.class && x.bounds == y.bounds
        },
        |x, y| !x.resource_id.is_empty() && x.resource_id == y.resource_id && x.class == y.class,
        |x, y| x.resource_id.is_empty() && y.resource_id.is_empty() && x.class == y.class && x.bounds == y.bounds,
        |x, y| {
            x.resource_id.is_empty()
                && y.resource_id.is_empty()
                && x.class == y.class
                && ((!x.text.is_empty() && x.text == y.text)
                    || (!x.content_desc.is_empty() && x.content_desc == y.content_desc))
        },
    ];
    let mut scroll: Option<([i32; 2], [i32; 4])> = None;
    for (r, rule) in rules.into_iter().enumerate() {
        if r == 2 {
            scroll = scroll_of(before, after, &pairs);
        }
        // Inside a list that scrolled, a row is matched by its label only: the one now at its old place (or with
        // its id) is another row.
        let in_list = |e: &Element| scroll.is_some_and(|(_, list)| contains(&list, e));
        for &i in &b {
            if used_b[i] {
                continue;
            }
            let best = a
                .iter()
                .copied()
                .filter(|&j| {
                    !used_a[j]
                        && before[i].package == after[j].package
                        && (r < 2 || !(in_list(&before[i]) || in_list(&after[j])))
                        && rule(&before[i], &after[j])
                })
                .min_by_key(|&j| distance(&before[i], &after[j]));
            if let Some(j) = best {
                used_b[i] = true;
                used_a[j] = true;
                pairs.push((i, j));
            }
        }
    }
    // Rows that only moved with the scroll (or were clipped at its edges) are no news.
    let only_scrolled = |i: usize, j: usize| {
        let (x, y) = (&before[i], &after[j]);
        scroll.is_some_and(|(_, list)| contains(&list, x) || contains(&list, y))
            && same_attrs(x, &Element { bounds: x.bounds, ..y.clone() })
    };
    let mut changed: Vec<(usize, usize)> =
        pairs.into_iter().filter(|&(i, j)| !same_attrs(&before[i], &after[j]) && !only_scrolled(i, j)).collect();
    changed.sort_by_key(|&(_, j)| j);
    Delta {
        appeared: a.into_iter().filter(|&j| !used_a[j]).collect(),
        disappeared: b.into_iter().filter(|&i| !used_b[i]).collect(),
        changed,
        scrolled: scroll,
    }
}

/// What a changed element was, for each attribute that differs.
fn was(x: &Element, y: &Element) -> Value {
    let mut m = Map::new();
    if x.text != y.text && !x.password && !y.password {
        m.insert("text".into(), json!(x.text));
    }
    if x.content_desc != y.content_desc {
        m.insert("content_desc".into(), json!(x.content_desc));
    }
    for (k, p, q) in [
        ("checked", x.checked, y.checked),
        ("enabled", x.enabled, y.enabled),
        ("focused", x.focused, y.focused),
        ("selected", x.selected, y.selected),
    ] {
        if p != q {
            m.insert(k.into(), json!(p));
        }
    }
    if x.bounds != y.bounds {
        m.insert("bounds".into(), json!(x.bounds));
    }
    Value::Object(m)
}

/// Elements in observe's shape, at most [`DELTA_MAX`].
fn list_of(els: &[Element], idx: &[usize]) -> Vec<Value> {
    idx.iter().take(DELTA_MAX).map(|&i| els[i].to_json()).collect()
}

/// The delta as a result shows it: elements in observe's shape (indices of the after-tree, so they are targets
/// with the observation that goes with them), at most [`DELTA_MAX`] of each kind, and the counts.
pub fn to_json(before: &[Element], after: &[Element], d: &Delta) -> Value {
    let list = list_of;
    let changed: Vec<Value> = d
        .changed
        .iter()
        .take(DELTA_MAX)
        .map(|&(i, j)| {
            let mut v = after[j].to_json();
            v["was"] = was(&before[i], &after[j]);
            v
        })
        .collect();
    let mut v = json!({
        "appeared": list(after, &d.appeared),
        "disappeared": list(before, &d.disappeared),
        "changed": changed,
        "counts": {"appeared": d.appeared.len(), "disappeared": d.disappeared.len(), "changed": d.changed.len()},
        "truncated": d.appeared.len().max(d.disappeared.len()).max(d.changed.len()) > DELTA_MAX,
    });
    if let Some((by, list)) = d.scrolled {
        // A scroll reads as rows in and out: `appeared` scrolled in; of what scrolled out, its labels. What went
        // elsewhere on the screen is still listed as `disappeared`.
        let (rows, rest): (Vec<usize>, Vec<usize>) = d.disappeared.iter().partition(|&&i| contains(&list, &before[i]));
        let out: Vec<&str> = rows
            .iter()
            .map(|&i| &before[i])
            .filter(|e| !e.password)
            .map(|e| if e.text.is_empty() { e.content_desc.as_str() } else { e.text.as_str() })
            .filter(|t| !t.is_empty())
            .take(DELTA_MAX)
            .collect();
        v["scrolled"] = json!({"by": by, "out": out});
        if rest.is_empty() {
            if let Value::Object(m) = &mut v {
                m.remove("disappeared");
            }
        } else {
            v["disappeared"] = json!(list_of(before, &rest));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn el(index: usize, class: &str, id: &str, text: &str, bounds: [i32; 4]) -> Element {
        Element { index, text: text.into(), resource_id: id.into(), ..Element::new(class, "p", bounds) }
    }

    #[test]
    fn a_counter_whose_text_changed_is_one_changed_element() {
        let before = vec![
            el(0, "TextView", "p:id/count", "Count: 0", [0, 0, 100, 50]),
            el(1, "Button", "p:id/inc", "+", [0, 60, 100, 110]),
        ];
        let mut after = before.clone();
        after[0].text = "Count: 1".into();
        let d = diff(&before, &after);
        assert_eq!(d, Delta { appeared: vec![], disappeared: vec![], changed: vec![(0, 0)], scrolled: None });
        let j = to_json(&before, &after, &d);
        assert_eq!(j["changed"][0]["text"], "Count: 1");
        assert_eq!(j["changed"][0]["was"], json!({"text": "Count: 0"}));
        assert_eq!(j["counts"], json!({"appeared": 0, "disappeared": 0, "changed": 1}));
    }

    #[test]
    fn a_dialog_appears_and_a_row_moves_by_its_id_or_its_text() {
        let before = vec![
            el(0, "TextView", "", "Wi-Fi", [0, 100, 500, 150]),
            el(1, "Switch", "p:id/sw", "", [500, 100, 600, 150]),
        ];
        let mut after = vec![
            el(0, "TextView", "", "Wi-Fi", [0, 300, 500, 350]),
            el(1, "Switch", "p:id/sw", "", [500, 300, 600, 350]),
            el(2, "Button", "android:id/button1", "Allow", [100, 900, 400, 1000]),
        ];
        after[1].checked = true;
        let d = diff(&before, &after);
        assert_eq!(d.appeared, vec![2]);
        assert!(d.disappeared.is_empty());
        assert_eq!(d.changed, vec![(0, 0), (1, 1)], "both moved; the switch also turned on");
        let j = to_json(&before, &after, &d);
        assert_eq!(j["changed"][1]["was"], json!({"checked": false, "bounds": [500, 100, 600, 150]}));
        assert_eq!(j["appeared"][0]["text"], "Allow");
    }

    /// A recycled list: rows keep their id and bounds but show other labels after a scroll. The rows that
    /// scrolled in appear, the ones that went out are named, none is "changed".
    #[test]
    fn a_scroll_is_rows_in_and_out_not_recycled_rows_changed() {
        let labels = ["Network & internet", "Internet", "SIMs", "Airplane mode", "Hotspot", "Connected", "Bluetooth"];
        let list = |first: usize| -> Vec<Element> {
            let mut v =
                vec![Element { scrollable: true, ..el(0, "RecyclerView", "p:id/list", "", [0, 100, 500, 500]) }];
            for (k, label) in labels.iter().enumerate().skip(first).take(4) {
                let top = 100 + (k - first) as i32 * 100;
                v.push(el(v.len(), "TextView", "android:id/title", label, [0, top, 500, top + 100]));
            }
            v
        };
        let (before, after) = (list(0), list(2));
        let d = diff(&before, &after);
        assert_eq!(d.scrolled, Some(([0, -200], [0, 100, 500, 500])), "{d:?}");
        assert!(d.changed.is_empty(), "{d:?}");
        let j = to_json(&before, &after, &d);
        let appeared: Vec<&str> =
            j["appeared"].as_array().unwrap().iter().map(|e| e["text"].as_str().unwrap()).collect();
        assert_eq!(appeared, ["Hotspot", "Connected"], "{j}");
        assert_eq!(j["scrolled"]["out"], json!(["Network & internet", "Internet"]), "{j}");
        assert!(j.get("disappeared").is_none() && !j.to_string().contains("was"), "{j}");
        // Something that went outside the list meanwhile is still a disappearance, not a row that scrolled out.
        let mut with_toast = before.clone();
        with_toast.push(el(with_toast.len(), "TextView", "", "Saved", [0, 600, 500, 650]));
        let j = to_json(&with_toast, &after, &diff(&with_toast, &after));
        assert_eq!(j["scrolled"]["out"], json!(["Network & internet", "Internet"]), "{j}");
        assert_eq!(texts_of(&j["disappeared"]), ["Saved"], "{j}");
    }

    fn texts_of(v: &Value) -> Vec<&str> {
        v.as_array().unwrap().iter().map(|e| e["text"].as_str().unwrap()).collect()
    }

    #[test]
    fn elements_of_another_app_are_never_the_same_element() {
        let before = vec![el(0, "TextView", "", "Settings", [0, 0, 100, 50])];
        let mut after = vec![el(0, "TextView", "", "Home", [0, 0, 100, 50])];
        after[0].package = "q".into();
        let d = diff(&before, &after);
        assert_eq!((d.appeared, d.disappeared, d.changed), (vec![0], vec![0], vec![]));
    }

    #[test]
    fn layout_containers_and_unchanged_elements_are_no_news() {
        let mut frame = el(0, "FrameLayout", "", "", [0, 0, 1080, 2400]);
        let before = vec![frame.clone(), el(1, "TextView", "", "Title", [0, 0, 100, 50])];
        frame.bounds = [0, 10, 1080, 2400];
        let after = vec![frame, el(1, "TextView", "", "Title", [0, 0, 100, 50])];
        assert!(diff(&before, &after).is_empty());
    }

    #[test]
    fn a_password_fields_text_is_never_in_was_and_lists_are_bounded() {
        let mut p = el(0, "EditText", "p:id/pw", "••", [0, 0, 10, 10]);
        p.password = true;
        let mut q = p.clone();
        q.text = "•••".into();
        q.focused = true;
        let j = to_json(&[p.clone()], &[q.clone()], &diff(&[p], &[q]));
        assert_eq!(j["changed"][0]["was"], json!({"focused": false}), "{j}");
        assert!(!j.to_string().contains('•'), "{j}");
        let many: Vec<Element> = (0..50)
            .map(|i| el(i, "TextView", "", &format!("row {i}"), [0, i as i32 * 10, 10, i as i32 * 10 + 9]))
            .collect();
        let j = to_json(&[], &many, &diff(&[], &many));
        assert_eq!(
            (j["appeared"].as_array().unwrap().len(), j["counts"]["appeared"].clone(), j["truncated"].clone()),
            (DELTA_MAX, json!(50), json!(true))
        );
    }
}
