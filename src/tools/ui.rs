//! Observation tools over the accessibility tree: `android_ui_dump` and `android_ui_wait` (the tree itself is
//! read by `dump.rs`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::invalid;
use super::device::tool;
use super::dump;
use super::element::{element_schema, Element};
use super::observations;
use super::registry::{Tool, ToolSpec};
use super::{args, tree, web};
use crate::device::adb::AdbBackend;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// `text` is a substring of the element's text, or with `exact` the whole text. A password field's text never
/// matches (it is not the agent's to read).
fn matches(e: &Element, text: Option<&str>, exact: bool, id: Option<&str>, desc: Option<&str>) -> bool {
    text.is_none_or(|t| !e.password && if exact { e.text == t } else { e.text.contains(t) })
        && id.is_none_or(|i| e.resource_id == i || e.resource_id.ends_with(&format!(":id/{i}")))
        && desc.is_none_or(|d| e.content_desc.contains(d))
}

/// Texts listed when a wait times out (the screen the agent was waiting on, so it can correct the next call).
const WAIT_LISTED: usize = 20;

/// The distinct texts and content descriptions on screen (first [`WAIT_LISTED`], each at most 60 characters, never
/// a password field's), and how many there were.
fn on_screen(all: &[Element]) -> (Vec<String>, usize) {
    let mut seen = std::collections::BTreeSet::new();
    let texts: Vec<String> = all
        .iter()
        .filter(|e| !e.password)
        .flat_map(|e| [&e.text, &e.content_desc])
        .filter(|t| !t.trim().is_empty())
        .map(|t| t.chars().take(60).collect::<String>())
        .filter(|t| seen.insert(t.clone()))
        .collect();
    let total = texts.len();
    (texts.into_iter().take(WAIT_LISTED).collect(), total)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UiDumpArgs {
    /// Only elements that can be tapped, scrolled or focused
    #[serde(default)]
    only_interactive: bool,
    #[schemars(range(min = 1, max = 1000))]
    #[serde(default = "args::elements_300")]
    max_elements: u32,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UiWaitArgs {
    /// Substring of the element text (whole text with exact)
    #[schemars(length(min = 1, max = 200))]
    text: Option<String>,
    /// Match `text` exactly instead of as a substring
    #[serde(default)]
    exact: bool,
    /// pkg:id/name or name
    #[schemars(length(min = 1, max = 200))]
    resource_id: Option<String>,
    /// Substring of the content description
    #[schemars(length(min = 1, max = 200))]
    content_desc: Option<String>,
    /// Wait for it to disappear instead
    #[serde(default)]
    gone: bool,
    #[schemars(range(min = 0, max = 30_000))]
    #[serde(default = "ms_5000")]
    timeout_ms: u32,
}

fn ms_5000() -> u32 {
    5000
}

/// `web_content`: the operator's policy lets ui_dump read web pages (`tools::web`), as observe does.
pub fn tools(adb: &Arc<AdbBackend>, web_content: bool) -> Vec<Arc<dyn Tool>> {
    vec![
        tool(
            ToolSpec {
                id: "android_ui_dump",
                title: "Read the screen's UI elements",
                description: "The visible UI elements and an observation_id for `element: {index, \
                              observation_id}`. Cheaper than android_observe when text is enough.",
                input: args::schema::<UiDumpArgs>(),
                output: json!({"type": "object", "properties": {
                    "observation_id": {"type": "string"}, "package": {"type": "string"},
                    "count": {"type": "integer"}, "truncated": {"type": "boolean"},
                    "tree": tree::schema(),
                    "scrollables": tree::scrollables_schema(),
                    "web": {"type": "object"},
                    "elements": {"type": "array", "items": element_schema(true)}}}),
                side_effect: false,
                settles: false,
                deadline: Duration::from_secs(20),
            },
            adb,
            move |c| async move {
                let a: UiDumpArgs = c.parse()?;
                let began = Instant::now();
                let dump::Tree { elements: mut all, cover } = dump::read(&c, Duration::from_secs(14)).await?;
                // The same elements and indices as android_observe: a page's own elements replace the WebView's
                // accessibility nodes, numbered after the tree (issue 49 item 7).
                let left = Duration::from_secs(17).saturating_sub(began.elapsed());
                let page = web::read(&c, &all, web_content, left).await;
                let covered = page.covered(&all);
                page.join(&mut all);
                let (only_interactive, max) = (a.only_interactive, a.max_elements as usize);
                // The focused window's package where the helper names windows (the first node may be the
                // keyboard's or a dialog's), else the first node's.
                let focused = match &cover.windows {
                    tree::Windows::All(ws) => ws.iter().find(|w| w.focused).map(|w| w.package.clone()),
                    tree::Windows::Focused => None,
                };
                let package = focused.or_else(|| all.first().map(|e| e.package.clone())).unwrap_or_default();
                let shown: Vec<Element> = all.iter().filter(|e| !covered.contains(&e.index)).cloned().collect();
                let picked: Vec<&Element> =
                    shown.iter().filter(|e| e.is_interesting() && (!only_interactive || e.is_interactive())).collect();
                let truncated = picked.len() > max;
                let elements: Vec<Value> = picked.iter().take(max).map(|e| e.to_json()).collect();
                let scrollables = tree::scrollables(&shown);
                // Kept like an android_observe's list, so `element: {index, observation_id}` works on what the
                // agent read here (checked against the screen again before acting).
                let id = observations::keep(&c.call.channel_id, &c.device, all);
                let mut out = json!({"observation_id": id, "package": package, "count": elements.len(),
                                     "truncated": truncated, "tree": cover.to_json(), "elements": elements});
                if !scrollables.is_empty() {
                    out["scrollables"] = json!(scrollables);
                }
                if let Some(w) = page.to_json() {
                    out["web"] = w;
                }
                Ok(out)
            },
        ),
        tool(
            ToolSpec {
                id: "android_ui_wait",
                title: "Wait for a UI element",
                description: "Wait until a matching element is on screen (with gone: is not), instead of \
                              sleeping. ui_wait_timeout lists the texts on screen.",
                input: args::schema::<UiWaitArgs>(),
                output: json!({"type": "object", "properties": {
                    "found": {"type": "boolean"}, "waited_ms": {"type": "integer"}, "element": element_schema(true),
                    "tree": {"type": "object"}}}),
                side_effect: false,
                settles: false,
                deadline: Duration::from_secs(40),
            },
            adb,
            |c| async move {
                let a: UiWaitArgs = c.parse()?;
                let (text, id, desc) = (a.text.as_deref(), a.resource_id.as_deref(), a.content_desc.as_deref());
                if text.is_none() && id.is_none() && desc.is_none() {
                    return Err(invalid("give at least one of `text`, `resource_id`, `content_desc`"));
                }
                let (gone, exact) = (a.gone, a.exact);
                let timeout = Duration::from_millis(u64::from(a.timeout_ms));
                let started = Instant::now();
                loop {
                    // Longer than uiautomator's own 10 s idle wait, so a screen that never idles ends in
                    // ui_unavailable (its real cause) rather than in a timeout.
                    let dump::Tree { elements: all, cover } = dump::read(&c, Duration::from_secs(14)).await?;
                    let hit = all.iter().find(|e| matches(e, text, exact, id, desc));
                    let waited = started.elapsed().as_millis() as u64;
                    let tree = cover.to_json();
                    match (hit, gone) {
                        (Some(e), false) => {
                            return Ok(
                                json!({"found": true, "waited_ms": waited, "element": e.to_json(), "tree": tree}),
                            )
                        }
                        (None, true) => return Ok(json!({"found": true, "waited_ms": waited, "tree": tree})),
                        _ if started.elapsed() >= timeout => {
                            let what = [("text", text), ("resource_id", id), ("content_desc", desc)]
                                .iter()
                                .filter_map(|(k, v)| v.map(|v| format!("{k}={v:?}")))
                                .collect::<Vec<_>>()
                                .join(", ");
                            let state = if gone { "still on screen" } else { "not on screen" };
                            let (seen, total) = on_screen(&all);
                            let listed: Vec<String> = seen.iter().map(|t| format!("{t:?}")).collect();
                            let more = if total > seen.len() {
                                format!(" … {} more", total - seen.len())
                            } else {
                                String::new()
                            };
                            let exactly = if exact && text.is_some() { " (exact text)" } else { "" };
                            return Err(ProtoError::new(
                                ErrorCode::UiWaitTimeout,
                                format!(
                                    "element {what}{exactly} {state} after {waited} ms. Texts on screen: {}{more}",
                                    if listed.is_empty() { "none".to_owned() } else { listed.join(", ") }
                                ),
                            )
                            .with_details(json!({"on_screen": seen, "on_screen_total": total, "tree": tree})));
                        }
                        _ => {
                            // A poll is a step the caller can be told of (`tool.progress.push`; MCP progress).
                            let state = if gone { "still on screen" } else { "not on screen yet" };
                            (c.call.progress)(&format!("polled the screen: {state} after {waited} ms"), None);
                            tokio::time::sleep(Duration::from_millis(400)).await
                        }
                    }
                }
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::dump::parse_dump;

    const XML: &str = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.android.launcher3" content-desc="" clickable="false" enabled="true" focused="false" checked="false" bounds="[0,0][1080,2400]"><node index="0" text="Count: 3 &amp; &quot;more&quot; &#x4E2D;" resource-id="com.sim:id/counter" class="android.widget.TextView" package="com.android.launcher3" content-desc="" clickable="false" enabled="true" focused="false" checked="false" bounds="[240,600][840,720]" /><node index="1" text="Increment" resource-id="com.sim:id/button" class="android.widget.Button" package="com.android.launcher3" content-desc="a &gt; b" clickable="true" enabled="true" focused="false" checked="false" bounds="[337,900][742,1056]" /></node></hierarchy>"#;

    #[test]
    fn parses_nodes_entities_and_centres() {
        let els = parse_dump(XML).unwrap();
        assert_eq!(els.len(), 3);
        assert_eq!(els[1].text, "Count: 3 & \"more\" 中");
        assert_eq!(els[2].content_desc, "a > b");
        assert!(els[2].clickable);
        assert_eq!(els[2].center(), [539, 978]);
        assert!(!els[0].is_interesting());
        assert_eq!(els[2].index, 2);
        let j = els[2].to_json();
        assert_eq!(j["class"], "Button");
        assert_eq!(j["package"], "com.android.launcher3");
        assert_eq!(j["center"], json!([539, 978]));
        assert!(matches(&els[2], None, false, Some("button"), None));
        assert!(matches(&els[1], Some("Count: 3"), false, None, None));
        assert!(!matches(&els[1], Some("Count: 3"), true, None, None), "exact needs the whole text");
        assert!(matches(&els[1], Some("Count: 3 & \"more\" 中"), true, None, None));
        assert!(!matches(&els[1], Some("Count: 4"), false, None, None));
    }

    #[test]
    fn password_fields_never_return_their_text() {
        let xml = r#"<hierarchy><node index="0" text="hunter2" resource-id="pw" class="android.widget.EditText" package="p" content-desc="" clickable="true" enabled="true" password="true" bounds="[0,0][10,10]" /></hierarchy>"#;
        let e = &parse_dump(xml).unwrap()[0];
        assert!(e.password);
        let j = e.to_json();
        assert!(j.get("text").is_none() && j["password"] == true, "{j}");
        assert!(!j.to_string().contains("hunter2"));
    }

    #[test]
    fn rejects_non_dumps() {
        assert!(parse_dump("ERROR: could not get idle state.").is_err());
        assert!(parse_dump("<hierarchy><node text=\"x").is_err());
    }
}
