//! What `/mcp` says about its tools, in MCP's words: the tool list with each tool's `annotations` (the hints a host
//! uses to auto-approve: derived here, in one place, from the registry's tool table), the MCP-only tools
//! (`select_device`, `list_devices`, `release_device`) and their short answers, and tool errors worded for an MCP
//! client (no xAgent packet names: the session is the channel, `select_device`/`release_device` are its binding).

use serde_json::{json, Map, Value};

use super::state::App;
use crate::protocol as proto;

/// The MCP-only tool that binds a phone by `auth.start`'s fields (the card's auth flow `adb_device`).
pub const SELECT_DEVICE: &str = "select_device";
/// The MCP-only tool that lists the phones this connector sees and whether each is free.
pub const LIST_DEVICES: &str = "list_devices";
/// The MCP-only tool that gives the session's phone back without ending the session.
pub const RELEASE_DEVICE: &str = "release_device";
/// The auth flow `select_device` runs.
pub const FLOW: &str = "adb_device";

/// Tools that can destroy data on the phone (an app's data, a file, whatever an allowed shell command does); a
/// batch can hold any of them as a step.
const DESTRUCTIVE: &[&str] =
    &["android_app_uninstall", "android_app_clear_data", "android_file_push", "android_shell", "android_batch"];
/// Side-effecting tools whose repeat with the same arguments leaves the phone as the first call did.
const IDEMPOTENT: &[&str] = &[
    "android_app_launch",
    "android_app_stop",
    "android_app_install",
    "android_app_uninstall",
    "android_app_clear_data",
    "android_wake",
    "android_unlock",
    "android_lock",
    "android_rotate",
    "android_clipboard",
    "android_permission",
    "android_file_push",
];
/// Tools whose effect can reach past the phone: what an app does on a tap or a key (send, buy, post), a web page.
const OPEN_WORLD: &[&str] = &[
    "android_tap",
    "android_long_press",
    "android_swipe",
    "android_scroll",
    "android_pinch",
    "android_gesture",
    "android_input_text",
    "android_key",
    "android_open_url",
    "android_app_launch",
    "android_shell",
    "android_batch",
];

/// MCP `annotations` of a card tool: read-only is the registry's `side_effect` turned round; the rest from the
/// tables above. Every hint is given (MCP's defaults assume the worst: destructive, open-world).
pub fn annotations(id: &str, side_effect: bool) -> Value {
    json!({
        "readOnlyHint": !side_effect,
        "destructiveHint": side_effect && DESTRUCTIVE.contains(&id),
        "idempotentHint": !side_effect || IDEMPOTENT.contains(&id),
        "openWorldHint": OPEN_WORLD.contains(&id),
    })
}

/// `tools/list`: the MCP-only tools, then the card's tools with the card's input schemas (less
/// `connector_channel_id`), each with its annotations.
pub fn tool_list(app: &App) -> Vec<Value> {
    let card = app.hub.card();
    let registry = app.hub.registry();
    let mut tools = vec![select_device_tool(card), list_devices_tool(), release_device_tool()];
    tools.extend(card.tools.iter().map(|t| {
        let side_effect = registry.spec(&t.tool_id).is_none_or(|s| s.side_effect);
        json!({
            "name": t.tool_id,
            "title": t.title,
            "description": t.description,
            "inputSchema": proto::card::without_connector_channel_id(&t.input_schema),
            "annotations": annotations(&t.tool_id, side_effect),
        })
    }));
    tools
}

/// `select_device`'s input: the fields of the card's `adb_device` auth flow, all optional text, as `auth.start`
/// takes them.
fn select_device_tool(card: &proto::card::Card) -> Value {
    let mut props = Map::new();
    for f in card.auth_flows.iter().filter(|f| f.id == FLOW).flat_map(|f| &f.fields) {
        let about = [f.help_text, f.placeholder].into_iter().flatten().collect::<Vec<_>>().join(" ");
        props.insert(f.name.to_owned(), json!({"type": "string", "description": about}));
    }
    json!({
        "name": SELECT_DEVICE,
        "title": "Select the phone",
        "description": "Binds a phone to this MCP session (giving back the one it held): by serial (list_devices \
                        names them), or any free phone matching every given constraint. Without it, the first tool \
                        call binds any free phone. Answers the phone's serial, model, screen and lease.",
        "inputSchema": {"type": "object", "properties": props, "additionalProperties": false},
        "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
    })
}

fn list_devices_tool() -> Value {
    json!({
        "name": LIST_DEVICES,
        "title": "List the phones",
        "description": "The phones this connector sees: serial, model, manufacturer, SDK, connection state, and who \
                        has each (free, this session, another session, an operator). Pass a free one's serial to \
                        select_device.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
    })
}

fn release_device_tool() -> Value {
    json!({
        "name": RELEASE_DEVICE,
        "title": "Release the phone",
        "description": "Gives this session's phone back to the pool (its settings restored) without ending the \
                        session; the next tool call, or select_device, binds one again.",
        "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false},
        "annotations": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false},
    })
}

/// `list_devices`' answer: every phone the operator allows, who has it.
pub fn list_devices(app: &App, channel: &str) -> Value {
    let hub = &app.hub;
    let holders = hub.holders();
    let operators = hub.taken_over();
    let mut devices: Vec<Value> = hub
        .backend()
        .devices()
        .into_iter()
        .filter(|d| hub.device_allowed(&d.key))
        .map(|d| {
            let held = holders.iter().find(|h| h.device == d.key);
            let by = match held {
                _ if operators.contains(&d.key) => "an operator (device wall)",
                None => "free",
                Some(h) if h.channel_id == channel => "this session",
                Some(_) => "another session",
            };
            json!({
                "serial": d.key.serial,
                "model": d.model,
                "manufacturer": d.manufacturer,
                "sdk": d.sdk,
                "state": d.state.as_str(),
                "held_by": by,
            })
        })
        .collect();
    devices.sort_by(|a, b| a["serial"].as_str().cmp(&b["serial"].as_str()));
    let free = devices.iter().filter(|d| d["held_by"] == "free" && d["state"] == "online").count();
    json!({"devices": devices, "free": free})
}

/// `select_device`'s answer: the phone (serial, model), its screen from `android_device_status` (`status`: its
/// result, or `None` when it could not be read) and the lease. Not the xAgent connection descriptor.
pub fn selected(app: &App, channel: &str, status: Option<&Value>, idle_s: u64) -> Value {
    let binding = app.hub.binding(channel);
    let info = binding.as_ref().and_then(|b| app.hub.backend().info(b));
    let mut out = json!({
        "serial": binding.as_ref().map(|b| b.serial.clone()),
        "model": info.as_ref().map(|d| d.model.clone()),
        "manufacturer": info.as_ref().map(|d| d.manufacturer.clone()),
        "sdk": info.as_ref().and_then(|d| d.sdk),
        "lease": {
            "held_by": "this session",
            "ends": "release_device, the end of this MCP session, or a session idle this long",
            "idle_timeout_s": idle_s,
        },
    });
    if let Some(s) = status {
        out["screen"] = json!({
            "width": s.get("screen_width"),
            "height": s.get("screen_height"),
            "orientation": s.get("orientation"),
            "on": s.get("screen_on"),
        });
    }
    out
}

/// xAgent words in a message → the MCP client's: the binding is `select_device`/`release_device`, the tool list is
/// `tools/list`, the channel is the session.
pub fn mcp_words(message: &str) -> String {
    const WORDS: &[(&str, &str)] = &[
        ("auth.logout of its channel", "release_device by its session"),
        ("auth.logout by the channel holding it", "release_device by the session holding it"),
        ("complete auth flow adb_device first", "call select_device first"),
        ("run auth flow adb_device", "call select_device"),
        ("this connector's card", "this server's tools/list"),
        ("the connector's card", "tools/list"),
        ("connector's card", "tools/list"),
        ("auth.start", "select_device"),
        ("auth.logout", "release_device"),
        ("`connector_channel_id`", "the session"),
        ("connector_channel_id", "the session"),
        ("bound to this channel", "bound to this session"),
        ("bound to another channel", "held by another session"),
        ("another channel", "another session"),
        ("other channels", "other sessions"),
        ("this channel", "this session"),
    ];
    let mut s = message.to_owned();
    for (from, to) in WORDS {
        if s.contains(from) {
            s = s.replace(from, to);
        }
    }
    s
}

/// A tool error as MCP carries it (`isError`), with the connector's code, message (in MCP words) and details.
pub fn tool_error(code: &str, message: &str, details: Option<&Value>) -> Value {
    let message = mcp_words(message);
    let mut e = json!({"code": code, "message": message});
    if let Some(d) = details {
        e["details"] = d.clone();
    }
    json!({
        "content": [{"type": "text", "text": format!("{code}: {message}")}],
        "structuredContent": {"error": e},
        "isError": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xagent_words_become_mcp_words() {
        let m = mcp_words(
            "the device is bound to another channel; bind another phone (auth.start without `serial` takes any \
             free one) or ask an operator to release it (Release on the device wall, or auth.logout by the channel \
             holding it)",
        );
        assert!(!m.contains("auth.") && !m.contains("channel"), "{m}");
        assert!(m.contains("select_device without `serial`") && m.contains("release_device"), "{m}");
        let m = mcp_words("tool `android_rotate` is not in this connector's card; did you mean android_logcat?");
        assert!(m.contains("tools/list") && !m.contains("card"), "{m}");
    }

    #[test]
    fn read_only_tools_are_never_destructive() {
        for id in DESTRUCTIVE.iter().chain(IDEMPOTENT).chain(OPEN_WORLD) {
            assert!(id.starts_with("android_"), "{id}");
        }
        let a = annotations("android_observe", false);
        assert_eq!(
            a,
            json!({"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false})
        );
        let a = annotations("android_app_uninstall", true);
        assert_eq!(a["destructiveHint"], true);
        assert_eq!(annotations("android_tap", true)["idempotentHint"], false);
    }
}
