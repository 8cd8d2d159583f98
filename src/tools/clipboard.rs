//! `android_clipboard`: read, set or clear the phone's clipboard, through the phone helper (`device::clipboard`
//! explains why there is no shell path, and the error says so where the helper does not run).
//!
//! The clip is another app's text — a copied password, a one-time code: it goes to the agent only (JSON-escaped;
//! `call` prints results through `terminal_json`), never to a log. The audit records that the clipboard was read
//! or set (tool, action, outcome); the text to set is the argument `text`, which the audit redacts to its length.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::context::invalid;
use super::device::tool;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::device::clipboard::{Clip, MAX_SET_BYTES};

#[derive(Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Action {
    Get,
    Set,
    Clear,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ClipboardArgs {
    action: Action,
    /// The text to put on the clipboard (set)
    #[schemars(length(max = 4000))]
    text: Option<String>,
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: "android_clipboard",
            title: "Read or set the clipboard",
            description: "The phone's clipboard text: get it, set it (text), or clear it.",
            input: super::args::schema::<ClipboardArgs>(),
            output: json!({"type": "object", "properties": {
                "text": {"type": ["string", "null"], "description": "get: null when there is no text clip"},
                "cut": {"type": "boolean", "description": "only the first 2048 UTF-16 units came"},
                "done": {"type": "boolean"}}}),
            side_effect: true,
            settles: false,
            deadline: Duration::from_secs(15),
        },
        adb,
        |c| async move {
            let a: ClipboardArgs = c.parse()?;
            let dl = c.spec.deadline;
            match (a.action, a.text) {
                (Action::Get, None) => Ok(match c.adb.clipboard_get(&c.device, dl).await? {
                    Clip::None => json!({"text": null, "cut": false}),
                    Clip::Text { text, cut } => json!({"text": text, "cut": cut}),
                }),
                (Action::Set, Some(t)) => {
                    if t.len() > MAX_SET_BYTES {
                        return Err(invalid(format!("text is {} bytes of UTF-8; at most {MAX_SET_BYTES}", t.len())));
                    }
                    c.adb.clipboard_set(&c.device, Some(&t), dl).await?;
                    Ok(json!({"done": true}))
                }
                (Action::Clear, None) => {
                    c.adb.clipboard_set(&c.device, None, dl).await?;
                    Ok(json!({"done": true}))
                }
                (Action::Set, None) => Err(invalid("action set needs text")),
                (_, Some(_)) => Err(invalid("text goes with action set only")),
            }
        },
    )]
}
