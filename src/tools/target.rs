//! Element targets for the control tools (`element` on `android_tap`, `android_long_press`, `android_input_text`,
//! `android_scroll`): either `{index, observation_id}` from an `android_observe`, or a selector
//! `{text | text_contains | resource_id | content_desc, class?, nth?}`.
//!
//! Never act on the wrong thing: every target is resolved against a fresh UI dump taken right before the action.
//! An observed element must still be there with the same identity (class, resource id, text, content
//! description) and nearly the same bounds ([`BOUNDS_TOLERANCE`]); if it moved (a list scrolled), it is
//! re-resolved by that identity when exactly one element has it; otherwise the call fails with `stale_element`
//! and lists what is on screen now. A selector that matches several elements fails with `ambiguous_element`
//! (unless `nth` picks one), one that matches nothing with `element_not_found` and the nearest texts.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::{invalid, Ctx};
use super::dump::{self, Tree};
use super::element::Element;
use super::observations;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// How far (device pixels, per edge) an observed element may have moved and still count as the same one in place.
pub const BOUNDS_TOLERANCE: i32 = 16;
/// Elements listed in an error (candidates, matches, nearest texts).
const LISTED: usize = 8;
/// Deadline of the fresh dump taken before an action: longer than uiautomator's own 10 s idle wait, so a screen that
/// never idles ends in `ui_unavailable` (its cause), not in a timeout.
const DUMP_DEADLINE: Duration = Duration::from_secs(14);

/// An `element` argument as the agent writes it: `{index, observation_id}` or a selector. The selector's meaning is
/// explained once, on `android_tap`'s `element` (`input.rs`, `TapArgs`); the fields carry no descriptions of their own
/// because every copy of this schema in the card is paid for in tokens. [`ElementArg::target`] checks the rules
/// the schema cannot say (one form or the other, a selector needs a criterion).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ElementArg {
    #[schemars(range(min = 0, max = 100_000))]
    pub index: Option<u64>,
    pub observation_id: Option<String>,
    pub text: Option<String>,
    pub text_contains: Option<String>,
    pub resource_id: Option<String>,
    pub content_desc: Option<String>,
    pub class: Option<String>,
    #[schemars(range(min = 0, max = 1000))]
    pub nth: Option<u64>,
    pub ignore_case: Option<bool>,
}

/// A selector-only argument (`android_scroll`'s `until`: what to look for, so no `{index, observation_id}`).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectorArg {
    pub text: Option<String>,
    pub text_contains: Option<String>,
    pub resource_id: Option<String>,
    pub content_desc: Option<String>,
    pub class: Option<String>,
    #[schemars(range(min = 0, max = 1000))]
    pub nth: Option<u64>,
}

impl SelectorArg {
    /// The selector it names, checked as an [`ElementArg`] selector is.
    pub fn selector(&self, name: &str) -> Result<Selector, ProtoError> {
        if [&self.text, &self.text_contains, &self.resource_id, &self.content_desc].iter().all(|v| v.is_none()) {
            return Err(invalid(format!(
                "argument `{name}` needs at least one of text, text_contains, resource_id, content_desc"
            )));
        }
        let as_element = ElementArg {
            index: None,
            observation_id: None,
            text: self.text.clone(),
            text_contains: self.text_contains.clone(),
            resource_id: self.resource_id.clone(),
            content_desc: self.content_desc.clone(),
            class: self.class.clone(),
            nth: self.nth,
            // `until` matches what it looks for: text_contains is already any case.
            ignore_case: None,
        };
        match as_element.target(name)? {
            Target::Selector(s) => Ok(s),
            Target::Observed { .. } => unreachable!("a SelectorArg has no index"),
        }
    }
}

impl ElementArg {
    /// What the argument named `name` asks for. Errors name the field and say what is accepted.
    pub fn target(&self, name: &str) -> Result<Target, ProtoError> {
        // Length bounds are checked here, not in the schema: every copy of the schema in the card is paid for in
        // tokens. An empty criterion would match every element whose text is empty.
        for (k, v) in [
            ("observation_id", &self.observation_id),
            ("text", &self.text),
            ("text_contains", &self.text_contains),
            ("resource_id", &self.resource_id),
            ("content_desc", &self.content_desc),
            ("class", &self.class),
        ] {
            let max = if k == "observation_id" { 64 } else { 200 };
            match v.as_deref().map(|v| v.chars().count()) {
                Some(0) => return Err(invalid(format!("argument `{name}.{k}` must not be empty"))),
                Some(n) if n > max => {
                    return Err(invalid(format!("argument `{name}.{k}` must have at most {max} characters, got {n}")))
                }
                _ => {}
            }
        }
        let sel = Selector {
            text: self.text.clone(),
            text_contains: self.text_contains.clone(),
            resource_id: self.resource_id.clone(),
            content_desc: self.content_desc.clone(),
            class: self.class.clone(),
            nth: self.nth.map(|n| n as usize),
            ignore_case: self.ignore_case.unwrap_or(false),
        };
        let has_criterion = sel.text.is_some()
            || sel.text_contains.is_some()
            || sel.resource_id.is_some()
            || sel.content_desc.is_some();
        match (self.index, &self.observation_id) {
            (Some(index), Some(observation_id)) => {
                if has_criterion || sel.class.is_some() || sel.nth.is_some() || self.ignore_case.is_some() {
                    return Err(invalid(format!(
                        "argument `{name}`: give either {{index, observation_id}} or a selector, not both"
                    )));
                }
                Ok(Target::Observed { index: index as usize, observation_id: observation_id.clone() })
            }
            (Some(_), None) => Err(invalid(format!(
                "argument `{name}.index` needs `{name}.observation_id` (the android_observe call it is from)"
            ))),
            (None, Some(_)) => Err(invalid(format!("argument `{name}.observation_id` needs `{name}.index`"))),
            (None, None) if has_criterion => Ok(Target::Selector(sel)),
            (None, None) => Err(invalid(format!(
                "argument `{name}` needs {{index, observation_id}} or at least one of text, text_contains, \
                 resource_id, content_desc"
            ))),
        }
    }
}

/// `arg.target(name)` for an optional argument.
pub fn parse(arg: Option<&ElementArg>, name: &str) -> Result<Option<Target>, ProtoError> {
    arg.map(|a| a.target(name)).transpose()
}

/// What an `element` argument asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Observed { index: usize, observation_id: String },
    Selector(Selector),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selector {
    pub text: Option<String>,
    pub text_contains: Option<String>,
    pub resource_id: Option<String>,
    pub content_desc: Option<String>,
    pub class: Option<String>,
    pub nth: Option<usize>,
    /// `text` compared ignoring case (`ignore_case: true`).
    pub ignore_case: bool,
}

impl Selector {
    pub fn matches(&self, e: &Element) -> bool {
        let area = e.bounds[2] > e.bounds[0] && e.bounds[3] > e.bounds[1];
        let same_text =
            |t: &String| if self.ignore_case { e.text.to_lowercase() == t.to_lowercase() } else { e.text == *t };
        area && self.text.as_ref().is_none_or(|t| !e.password && same_text(t))
            && self
                .text_contains
                .as_ref()
                .is_none_or(|t| !e.password && e.text.to_lowercase().contains(&t.to_lowercase()))
            && self
                .resource_id
                .as_ref()
                .is_none_or(|i| e.resource_id == *i || e.resource_id.ends_with(&format!(":id/{i}")))
            && self.content_desc.as_ref().is_none_or(|d| e.content_desc.contains(d.as_str()))
            && self.class.as_ref().is_none_or(|c| e.class == *c || e.class.rsplit('.').next() == Some(c.as_str()))
    }

    /// `text="OK", class="Button"`, for messages.
    /// The selector as `android_scroll`'s `until` takes it (without `nth`).
    pub fn until(&self) -> Value {
        let mut v = json!({});
        for (k, f) in [
            ("text", &self.text),
            ("text_contains", &self.text_contains),
            ("resource_id", &self.resource_id),
            ("content_desc", &self.content_desc),
            ("class", &self.class),
        ] {
            if let Some(f) = f {
                v[k] = json!(f);
            }
        }
        v
    }

    pub fn describe(&self) -> String {
        [
            ("text", &self.text),
            ("text_contains", &self.text_contains),
            ("resource_id", &self.resource_id),
            ("content_desc", &self.content_desc),
            ("class", &self.class),
        ]
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={v:?}")))
        .collect::<Vec<_>>()
        .join(", ")
    }

    /// The string an agent was looking for, to rank the nearest texts by.
    fn needle(&self) -> &str {
        self.text
            .as_deref()
            .or(self.text_contains.as_deref())
            .or(self.content_desc.as_deref())
            .or(self.resource_id.as_deref())
            .unwrap_or("")
    }
}

/// An element resolved against the current screen.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub element: Element,
    /// The observed element had moved and was found again by its identity.
    pub re_resolved: bool,
}

impl Resolved {
    /// Where to act: the centre of the element's bounds.
    pub fn point(&self) -> (i64, i64) {
        let [x, y] = self.element.center();
        (i64::from(x), i64::from(y))
    }

    /// The `element` part of an action's result: which element, where.
    pub fn to_json(&self) -> Value {
        let mut v = self.element.to_json();
        if let Some(m) = v.as_object_mut() {
            m.remove("package");
        }
        v
    }
}

/// Same identity: class, resource id, text, content description.
fn same_identity(a: &Element, b: &Element) -> bool {
    a.class == b.class && a.resource_id == b.resource_id && a.text == b.text && a.content_desc == b.content_desc
}

fn has_identity(e: &Element) -> bool {
    !e.resource_id.is_empty() || !e.text.is_empty() || !e.content_desc.is_empty()
}

fn near(a: &[i32; 4], b: &[i32; 4]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() <= BOUNDS_TOLERANCE)
}

/// `#12 "Item 9" (540, 700)`: an element as errors list it (never a password field's text).
fn brief(e: &Element) -> String {
    let [x, y] = e.center();
    let label = if e.password {
        "(password field)".to_owned()
    } else if !e.text.is_empty() {
        format!("{:?}", e.text.chars().take(40).collect::<String>())
    } else if !e.content_desc.is_empty() {
        format!("desc {:?}", e.content_desc.chars().take(40).collect::<String>())
    } else if !e.resource_id.is_empty() {
        format!("id {}", e.resource_id.rsplit('/').next().unwrap_or(&e.resource_id))
    } else {
        e.class.rsplit('.').next().unwrap_or(&e.class).to_owned()
    };
    format!("#{} {label} at ({x}, {y})", e.index)
}

/// An element as an error's `details.candidates` lists it: enough to tell candidates apart and to act on one
/// (`index` with the error's `observation_id`, or `center`). Never a password field's text; strings bounded.
fn candidate(e: &Element) -> Value {
    let cut = |s: &str| s.chars().take(80).collect::<String>();
    let mut v = json!({"index": e.index, "center": e.center()});
    for (k, s) in [("resource_id", &e.resource_id), ("text", &e.text), ("content_desc", &e.content_desc)] {
        let hidden = e.password && k == "text";
        if !s.is_empty() && !hidden {
            v[k] = json!(cut(s));
        }
    }
    v
}

/// `details` of an error listing `els`: the first [`LISTED`] as candidates, and how many there were in all.
fn candidates(els: &[&Element]) -> Value {
    json!({"candidates": els.iter().take(LISTED).map(|e| candidate(e)).collect::<Vec<_>>(), "total": els.len()})
}

fn list(els: &[&Element]) -> String {
    let mut s: Vec<String> = els.iter().take(LISTED).map(|e| brief(e)).collect();
    if els.len() > LISTED {
        s.push(format!("… {} more", els.len() - LISTED));
    }
    s.join("; ")
}

/// Resolves `target` against `now` (a fresh dump). Pure, so every rule is unit-tested.
pub fn resolve_in(
    target: &Target,
    observed: Option<&observations::Observation>,
    now: &[Element],
) -> Result<Resolved, ProtoError> {
    match target {
        Target::Observed { index, observation_id } => {
            let obs = observed.expect("observed targets come with their observation");
            let Some(was) = obs.elements.get(*index) else {
                // Name the indices android_observe listed (document order skips containers such as the root at
                // 0, which are never listed), not a range that suggests every number in it can be used.
                let listed: Vec<String> =
                    obs.elements.iter().filter(|e| e.is_interesting()).map(|e| e.index.to_string()).collect();
                let shown = if listed.len() > LISTED * 2 {
                    format!("{}, … {} more", listed[..LISTED * 2].join(", "), listed.len() - LISTED * 2)
                } else if listed.is_empty() {
                    "none".to_owned()
                } else {
                    listed.join(", ")
                };
                return Err(invalid(format!(
                    "observation {observation_id} has no element {index}; pass an `index` from its `elements` list \
                     (it listed {shown})"
                )));
            };
            let same: Vec<&Element> = now.iter().filter(|e| same_identity(e, was)).collect();
            if let Some(e) = same.iter().find(|e| near(&e.bounds, &was.bounds)) {
                return Ok(Resolved { element: (*e).clone(), re_resolved: false });
            }
            if same.len() == 1 && has_identity(was) {
                return Ok(Resolved { element: same[0].clone(), re_resolved: true });
            }
            let why = if same.is_empty() { "is no longer on screen" } else { "moved and is no longer unique" };
            let on_screen: Vec<&Element> = now.iter().filter(|e| e.is_interactive() && has_identity(e)).collect();
            Err(ProtoError::new(
                ErrorCode::StaleElement,
                format!(
                    "element {} of observation {observation_id} {why}; nothing was done. On screen now: {}",
                    brief(was),
                    if on_screen.is_empty() {
                        "no interactive elements; call android_observe again".to_owned()
                    } else {
                        list(&on_screen)
                    }
                ),
            )
            .with_details(candidates(&on_screen)))
        }
        Target::Selector(sel) => {
            let matches: Vec<&Element> = now.iter().filter(|e| sel.matches(e)).collect();
            match (matches.len(), sel.nth) {
                (0, _) => Err(ProtoError::new(
                    ErrorCode::ElementNotFound,
                    format!(
                        "no element matches {}; {}nearest texts on screen: {}{}",
                        sel.describe(),
                        case_hint(sel, now),
                        nearest(sel.needle(), now),
                        super::suggest::off_screen(&sel.until(), now)
                    ),
                )),
                (n, Some(k)) if k >= n => Err(ProtoError::new(
                    ErrorCode::ElementNotFound,
                    format!("nth={k} but only {n} element(s) match {}: {}", sel.describe(), list(&matches)),
                )
                .with_details(candidates(&matches))),
                (_, Some(k)) => Ok(Resolved { element: matches[k].clone(), re_resolved: false }),
                (1, None) => Ok(Resolved { element: matches[0].clone(), re_resolved: false }),
                (n, None) => Err(ProtoError::new(
                    ErrorCode::AmbiguousElement,
                    format!(
                        "{n} elements match {}: {}; add `nth` (0-based) or a more specific criterion (resource_id, \
                         class)",
                        sel.describe(),
                        list(&matches)
                    ),
                )
                .with_details(candidates(&matches))),
            }
        }
    }
}

/// `"ok" matches #3 "OK" ignoring case (ignore_case: true); ` when the selector's `text` misses only by case.
fn case_hint(sel: &Selector, now: &[Element]) -> String {
    let Some(t) = sel.text.as_ref().filter(|_| !sel.ignore_case) else { return String::new() };
    let loose = Selector { ignore_case: true, ..sel.clone() };
    let by_case: Vec<&Element> = now.iter().filter(|e| loose.matches(e)).collect();
    if by_case.is_empty() {
        return String::new();
    }
    format!("{t:?} matches {} only ignoring case (pass the exact text, or ignore_case: true); ", list(&by_case))
}

/// The texts (and content descriptions) on screen closest to `needle`, best first, for "did you mean".
fn nearest(needle: &str, now: &[Element]) -> String {
    let needle = needle.to_lowercase();
    let mut seen = std::collections::BTreeSet::new();
    let mut scored: Vec<(usize, String)> = now
        .iter()
        .filter(|e| !e.password)
        .flat_map(|e| [e.text.clone(), e.content_desc.clone()])
        .filter(|t| !t.is_empty() && seen.insert(t.clone()))
        .map(|t| (distance(&needle, &t.to_lowercase()), t))
        .collect();
    scored.sort();
    if scored.is_empty() {
        return "none (the screen has no text)".into();
    }
    scored
        .iter()
        .take(5)
        .map(|(_, t)| format!("{:?}", t.chars().take(40).collect::<String>()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Levenshtein distance, a containing string counted as closest (`suggest::distance`, one definition).
fn distance(a: &str, b: &str) -> usize {
    if !a.is_empty() && b.contains(a) {
        return b.chars().count() - a.chars().count();
    }
    super::suggest::distance(a, b)
}

/// Resolves `target` on the bound phone: looks up the observation (same channel, same device, not expired),
/// dumps the UI now and applies [`resolve_in`].
pub async fn resolve(c: &Ctx, target: &Target) -> Result<Resolved, ProtoError> {
    let obs = match target {
        Target::Observed { observation_id, index } => {
            match observations::recall(&c.call.channel_id, &c.device, observation_id) {
                Ok(o) => Some(o),
                Err(observations::Missing::Gone(o, _, e)) => {
                    // Its elements are still known: say where the element is now, with an id to act on it.
                    let now = dump::read(c, DUMP_DEADLINE).await.map_err(|_| e.clone())?;
                    return Err(with_observation(c, found_again(e, &o, *index, &now.elements), now));
                }
                Err(missing) => return Err(missing.into_error()),
            }
        }
        Target::Selector(_) => None,
    };
    let mut now = dump::read(c, DUMP_DEADLINE).await?;
    // An element of a web page is checked against the page read again (`tools::web`), not against the tree.
    let web_target = match (target, &obs) {
        (Target::Observed { index, .. }, Some(o)) => o.elements.get(*index).is_some_and(|e| e.web),
        _ => false,
    };
    if web_target {
        let page = super::web::read(c, &now.elements, true, super::web::READ_DEADLINE).await;
        if let Some(why) = page.reason() {
            return Err(ProtoError::new(
                ErrorCode::StaleElement,
                format!("the element is on a web page that could not be read again ({why}); nothing was done"),
            ));
        }
        page.join(&mut now.elements);
    }
    resolve_in(target, obs.as_deref(), &now.elements).map_err(|e| with_observation(c, e, now))
}

/// The answer to an observation that expired or was dropped (`e`): when element `index` of it is on screen now
/// (same identity; one of them, or the one where it was), the message and `details.candidates` name it where it is
/// now; otherwise `e` as it is. Nothing was done either way: the agent decides with what it sees now.
pub fn found_again(mut e: ProtoError, obs: &observations::Observation, index: usize, now: &[Element]) -> ProtoError {
    let Some(was) = obs.elements.get(index).filter(|w| has_identity(w)) else {
        e.message.push_str("; call android_observe again");
        return e;
    };
    let same: Vec<&Element> = now.iter().filter(|n| same_identity(n, was)).collect();
    let here = same.iter().find(|n| near(&n.bounds, &was.bounds)).copied();
    let Some(is) = here.or_else(|| (same.len() == 1).then(|| same[0])) else {
        e.message.push_str(&format!("; its element {} is not on screen now; call android_observe again", brief(was)));
        return e;
    };
    e.message.push_str(&format!("; nothing was done. Its element {} is on screen now as {}", brief(was), brief(is)));
    e.with_details(candidates(&[is]))
}

/// An error that lists candidates (ambiguous, stale, `nth` past the matches, an expired observation's element found
/// again) keeps the dump it was decided on in the channel's scratch slot (`observations::keep_scratch`: it never
/// pushes out an observation the agent made), so the agent can retry at once with `{index, observation_id}` of the
/// candidate it means — checked against the screen again like any observed target — instead of observing first.
fn with_observation(c: &Ctx, mut e: ProtoError, now: Tree) -> ProtoError {
    let Some(Value::Object(details)) = e.details.as_mut() else { return e };
    if details.get("candidates").and_then(Value::as_array).is_none_or(Vec::is_empty) {
        return e;
    }
    let id = observations::keep_scratch(&c.call.channel_id, &c.device, now.elements);
    details.insert("observation_id".into(), json!(id));
    details.insert("tree".into(), now.cover.to_json());
    e.message.push_str(&format!(
        "; to act on one of these, pass element {{index, observation_id: {id:?}}} (indices as listed after #)"
    ));
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    fn el(index: usize, text: &str, id: &str, bounds: [i32; 4]) -> Element {
        let mut e = dump::parse_dump(&format!(
            r#"<hierarchy><node text="{text}" resource-id="{id}" class="android.widget.Button" package="p" content-desc="" clickable="true" enabled="true" bounds="[{},{}][{},{}]" /></hierarchy>"#,
            bounds[0], bounds[1], bounds[2], bounds[3]
        ))
        .unwrap()
        .remove(0);
        e.index = index;
        e
    }

    fn obs(elements: Vec<Element>) -> observations::Observation {
        observations::Observation {
            id: "obs_1".into(),
            device: crate::device::DeviceKey { server: "s".into(), serial: "x".into() },
            created: Instant::now(),
            elements,
        }
    }

    fn observed(index: usize) -> Target {
        Target::Observed { index, observation_id: "obs_1".into() }
    }

    fn sel(f: impl FnOnce(&mut Selector)) -> Target {
        let mut s = Selector::default();
        f(&mut s);
        Target::Selector(s)
    }

    #[test]
    fn observed_elements_are_checked_then_re_resolved_or_stale() {
        let then =
            vec![el(0, "Item 1", "p:id/row", [0, 100, 100, 200]), el(1, "Item 2", "p:id/row", [0, 200, 100, 300])];
        let o = obs(then.clone());
        // Unchanged (a few pixels of jitter allowed).
        let mut moved_a_bit = then.clone();
        moved_a_bit[1].bounds[1] += 3;
        let r = resolve_in(&observed(1), Some(&o), &moved_a_bit).unwrap();
        assert_eq!((r.element.text.as_str(), r.re_resolved), ("Item 2", false));
        // Scrolled: found again by identity, at its new place.
        let scrolled =
            vec![el(0, "Item 2", "p:id/row", [0, 50, 100, 150]), el(1, "Item 3", "p:id/row", [0, 150, 100, 250])];
        let r = resolve_in(&observed(1), Some(&o), &scrolled).unwrap();
        assert_eq!((r.element.text.as_str(), r.re_resolved, r.point()), ("Item 2", true, (50, 100)));
        // Gone: stale, listing what is there now.
        let gone = vec![el(0, "Item 7", "p:id/row", [0, 100, 100, 200])];
        let e = resolve_in(&observed(1), Some(&o), &gone).unwrap_err();
        assert_eq!(e.code, ErrorCode::StaleElement);
        assert!(e.message.contains("\"Item 2\"") && e.message.contains("#0 \"Item 7\" at (50, 150)"), "{e}");
        // Moved and now twice on screen: refuse rather than guess.
        let twice = vec![el(0, "Item 2", "p:id/row", [0, 0, 100, 90]), el(1, "Item 2", "p:id/row", [0, 500, 100, 600])];
        assert_eq!(resolve_in(&observed(1), Some(&o), &twice).unwrap_err().code, ErrorCode::StaleElement);
        // An index the observation does not have: the message names the indices it listed, not a range.
        let e = resolve_in(&observed(9), Some(&o), &then).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArguments);
        assert!(e.message.contains("it listed 0, 1)") && !e.message.contains(".."), "{e}");
        // A root container at 0 (as every real dump has) is not listed by android_observe, so not offered.
        let mut root = el(0, "", "", [0, 0, 1080, 2400]);
        root.clickable = false;
        let with_root = obs(vec![root, el(1, "OK", "p:id/ok", [0, 100, 100, 200])]);
        let e = resolve_in(&observed(5), Some(&with_root), &then).unwrap_err();
        assert!(e.message.ends_with("(it listed 1)"), "{e}");
    }

    #[test]
    fn selectors_resolve_or_explain() {
        let now = vec![
            el(0, "OK", "p:id/ok_left", [0, 0, 100, 50]),
            el(1, "OK", "p:id/ok_right", [200, 0, 300, 50]),
            el(2, "Settings", "p:id/settings", [0, 100, 300, 150]),
        ];
        let e = resolve_in(&sel(|s| s.text = Some("OK".into())), None, &now).unwrap_err();
        assert_eq!(e.code, ErrorCode::AmbiguousElement);
        assert!(e.message.contains("#0 \"OK\" at (50, 25)") && e.message.contains("#1 \"OK\" at (250, 25)"), "{e}");
        let r = resolve_in(&sel(|s| (s.text, s.nth) = (Some("OK".into()), Some(1))), None, &now).unwrap();
        assert_eq!(r.element.index, 1);
        let r = resolve_in(&sel(|s| s.resource_id = Some("ok_right".into())), None, &now).unwrap();
        assert_eq!(r.point(), (250, 25));
        let r =
            resolve_in(&sel(|s| (s.text_contains, s.class) = (Some("sett".into()), Some("Button".into()))), None, &now);
        assert_eq!(r.unwrap().element.index, 2);
        let e = resolve_in(&sel(|s| s.text = Some("Setings".into())), None, &now).unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotFound);
        assert!(
            e.message.starts_with("no element matches text=\"Setings\"; nearest texts on screen: \"Settings\""),
            "{e}"
        );
        let e = resolve_in(&sel(|s| (s.text, s.nth) = (Some("OK".into()), Some(2))), None, &now).unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotFound);
        // Issue 35 item 4: a text that differs only in case says so, and ignore_case takes it.
        let e = resolve_in(&sel(|s| s.text = Some("settings".into())), None, &now).unwrap_err();
        assert_eq!(e.code, ErrorCode::ElementNotFound);
        assert!(
            e.message.contains(
                "\"settings\" matches #2 \"Settings\" at (150, 125) only ignoring case (pass the exact \
                                text, or ignore_case: true)"
            ),
            "{e}"
        );
        let r = resolve_in(&sel(|s| (s.text, s.ignore_case) = (Some("settings".into()), true)), None, &now).unwrap();
        assert_eq!(r.element.index, 2);
        let e = resolve_in(&sel(|s| s.text = Some("Setings".into())), None, &now).unwrap_err();
        assert!(!e.message.contains("ignoring case"), "no case hint without a case-only match: {e}");
    }

    #[test]
    fn parse_checks_the_shape() {
        let p = |v: Value| {
            let a: ElementArg = serde_json::from_value(v).unwrap();
            parse(Some(&a), "element")
        };
        assert_eq!(p(json!({"index": 3, "observation_id": "o"})).unwrap(), Some(observed_id(3, "o")));
        assert!(p(json!({"index": 3})).unwrap_err().message.contains("observation_id"));
        assert!(p(json!({"index": 3, "observation_id": "o", "text": "x"})).is_err());
        assert!(p(json!({"class": "Button"})).is_err(), "class alone is too broad");
        assert_eq!(p(json!({"text": ""})).unwrap_err().message, "argument `element.text` must not be empty");
        let long = "x".repeat(201);
        assert!(p(json!({ "text": long })).unwrap_err().message.contains("at most 200 characters, got 201"));
        assert!(matches!(p(json!({"text": "OK", "nth": 1})).unwrap(), Some(Target::Selector(_))));
        assert_eq!(parse(None, "element").unwrap(), None);
        let until: SelectorArg = serde_json::from_value(json!({"text_contains": "item", "nth": 2})).unwrap();
        assert_eq!(until.selector("until").unwrap().nth, Some(2));
        assert!(serde_json::from_value::<SelectorArg>(json!({"index": 1})).is_err(), "no index in a selector");
        let empty = SelectorArg::default().selector("until").unwrap_err().message;
        assert_eq!(empty, "argument `until` needs at least one of text, text_contains, resource_id, content_desc");
    }

    fn observed_id(index: usize, id: &str) -> Target {
        Target::Observed { index, observation_id: id.into() }
    }

    #[test]
    fn password_text_is_never_matched_or_listed() {
        let mut pw = el(0, "hunter2", "p:id/pw", [0, 0, 10, 10]);
        pw.password = true;
        let e = resolve_in(&sel(|s| s.text = Some("hunter2".into())), None, &[pw]).unwrap_err();
        assert!(!e.message.contains("hunter2") || e.message.starts_with("no element matches text=\"hunter2\""));
        assert!(!e.message["no element matches text=\"hunter2\"".len()..].contains("hunter2"), "{e}");
    }
}
