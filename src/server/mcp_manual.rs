//! The manual over MCP: the skill `/skill.md` serves (`control::SKILL_MD`) as an MCP resource (`resources/list`,
//! `resources/read`) and a prompt (`prompts/list`, `prompts/get`), and the `instructions` of `initialize`: what an
//! MCP host puts in front of its model without fetching anything, so the rules that keep a phone and its user safe
//! reach the model even when the host never reads the resource.
//!
//! The rules are [`RULES`]: each a key phrase taken word for word from SKILL.md and the sentence the instructions
//! carry. `tests/mcp_agent.rs` checks every key phrase is in both, so the two cannot drift apart unseen.

use serde_json::{json, Map, Value};

use super::control::SKILL_MD;

/// The skill as an MCP resource.
pub const SKILL_URI: &str = "skill://connector-device-adb/SKILL.md";
/// The skill as an MCP prompt.
pub const SKILL_PROMPT: &str = "connector-device-adb";
const SKILL_TITLE: &str = "Driving an Android phone over ADB (the connector's manual)";
const SKILL_ABOUT: &str = "How to drive the bound Android phone: observe → act by element → read the effect; what \
                           each result and error means; when to stop and ask the user.";

/// The ten rules `instructions` carries: (key phrase as SKILL.md words it, the rule). The key phrase appears in the
/// rule too (case aside), so a change of wording on either side shows.
pub const RULES: &[(&str, &str)] = &[
    (
        "act by element, not by coordinates",
        "Observe first (android_observe: numbered elements + observation_id; the marked screenshot comes only when \
         the elements cannot describe the screen, or with picture: true), then act by element, not by \
         coordinates: {element: {index, observation_id}}; x/y only where there is no element.",
    ),
    (
        "without observing again",
        "An action's effect.tree has its own observation_id: act on its elements by {index, observation_id} \
         without observing again.",
    ),
    (
        "never retry the same index",
        "stale_element means the screen changed and nothing was done: pick from details.candidates with \
         details.observation_id, or observe again — never retry the same index.",
    ),
    (
        "one action per step",
        "One action per step: read its result and effect before the next; never repeat a side effect after a \
         timeout — observe first.",
    ),
    (
        "unless the user gave them to you",
        "Never type passwords, payment data, one-time codes or personal data unless the user gave them to you for \
         exactly this purpose in this conversation.",
    ),
    (
        "stop and ask the user to unlock the phone",
        "locked: call android_unlock once; if it answers secure_lock (PIN, pattern, password), stop and ask the \
         user to unlock the phone. Never guess, type or draw a credential.",
    ),
    (
        "call `android_request_human` once",
        "For a code sent to someone else, a captcha, a payment confirmation or a physical action, call \
         `android_request_human` once with a short reason; human_unavailable: do not ask again in a loop.",
    ),
    (
        "`clipboard: not_restored`",
        "Typing non-ASCII pastes through the clipboard: `clipboard: not_restored` means your text is still on it — \
         mention it when the text was private; clear the clipboard of any secret you put there.",
    ),
    (
        "after two identical failures",
        "Never loop on a failing call: after two identical failures, stop and report what you saw.",
    ),
    (
        "unless the user explicitly asked",
        "Never change security, account, payment or developer settings, or factory-reset, unless the user \
         explicitly asked for exactly that.",
    ),
];

/// `initialize`'s `instructions`: what the session is, the rules, where the rest is.
pub fn instructions() -> String {
    let mut s = String::from(
        "Android phones over ADB. The first tool call binds any free phone to this session (list_devices shows \
         them; select_device picks one by serial, model, manufacturer, SDK range or labels); the phone is yours \
         until release_device or the session's end. A failed call is a tool error whose text starts with its code.\n\
         Rules:\n",
    );
    for (n, (_, rule)) in RULES.iter().enumerate() {
        s.push_str(&format!("{}. {rule}\n", n + 1));
    }
    s.push_str(&format!(
        "The full manual (every result field and error code): resource {SKILL_URI}, or prompt {SKILL_PROMPT}."
    ));
    s
}

fn skill_resource() -> Value {
    json!({
        "uri": SKILL_URI,
        "name": "SKILL.md",
        "title": SKILL_TITLE,
        "description": SKILL_ABOUT,
        "mimeType": "text/markdown",
        "size": SKILL_MD.len(),
    })
}

/// `resources/list`.
pub fn resources_list() -> Value {
    json!({"resources": [skill_resource()]})
}

/// `resources/read`; `Err` is the JSON-RPC error message (invalid params).
pub fn resources_read(params: &Map<String, Value>) -> Result<Value, String> {
    match params.get("uri").and_then(Value::as_str) {
        Some(SKILL_URI) => Ok(json!({"contents": [{"uri": SKILL_URI, "mimeType": "text/markdown", "text": SKILL_MD}]})),
        Some(other) => Err(format!("no resource {other:?}: this server has one, {SKILL_URI}")),
        None => Err("resources/read needs params.uri".into()),
    }
}

/// `prompts/list`.
pub fn prompts_list() -> Value {
    json!({"prompts": [{
        "name": SKILL_PROMPT,
        "title": SKILL_TITLE,
        "description": SKILL_ABOUT,
        "arguments": [{"name": "task", "description": "What to do on the phone (optional): appended after the manual", "required": false}],
    }]})
}

/// `prompts/get`: the manual as a user message, the task (if given) after it.
pub fn prompts_get(params: &Map<String, Value>) -> Result<Value, String> {
    match params.get("name").and_then(Value::as_str) {
        Some(SKILL_PROMPT) => {}
        Some(other) => return Err(format!("no prompt {other:?}: this server has one, {SKILL_PROMPT}")),
        None => return Err("prompts/get needs params.name".into()),
    }
    let args = params.get("arguments").and_then(Value::as_object);
    if let Some(k) = args.into_iter().flat_map(|a| a.keys()).find(|k| *k != "task") {
        return Err(format!("prompt {SKILL_PROMPT} has one argument, task; not {k:?}"));
    }
    let mut text = SKILL_MD.to_owned();
    match args.and_then(|a| a.get("task")) {
        None | Some(Value::Null) => {}
        Some(Value::String(t)) if t.trim().is_empty() => {}
        Some(Value::String(t)) => text.push_str(&format!("\n\n## Your task\n\n{}\n", t.trim())),
        Some(_) => return Err(format!("prompt {SKILL_PROMPT}: argument task must be text")),
    }
    Ok(json!({
        "description": SKILL_ABOUT,
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rule_carries_its_key_phrase() {
        assert_eq!(RULES.len(), 10);
        for (key, rule) in RULES {
            assert!(rule.to_lowercase().contains(&key.to_lowercase()), "{key:?} not in {rule:?}");
        }
    }
}
