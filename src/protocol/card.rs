//! The Connector Card (protocol §4.1, §10) and its cross-rules.
//!
//! The card is never hand-written JSON: `tools::Registry::card` assembles it from the tool registry, and
//! [`validate`] enforces every hard rule of §4.1 that the JSON Schema cannot express. The server refuses to start
//! with a card that fails it.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{json, Value};

use super::consts::{PROFILE_TARGET_TYPES, TARGET_TYPES};
use crate::build_info::BuildInfo;

#[derive(Clone, Debug, Serialize)]
pub struct Card {
    pub schema: &'static str,
    pub protocol_version: &'static str,
    pub build: BuildInfo,
    pub connector_card_id: &'static str,
    pub connector: ConnectorInfo,
    pub supports: Supports,
    pub tools: Vec<ToolDecl>,
    pub auth_flows: Vec<AuthFlow>,
    pub security: Security,
}

#[derive(Clone, Debug, Serialize)]
pub struct ConnectorInfo {
    pub name: &'static str,
    pub version: &'static str,
    pub vendor: &'static str,
    pub description: &'static str,
}

#[derive(Clone, Debug, Serialize)]
pub struct Supports {
    pub user_channel_mode: &'static str,
    pub target_types: Vec<&'static str>,
    pub targets: Vec<Target>,
    pub profiles: Vec<&'static str>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Target {
    pub target_type: &'static str,
    pub provider: &'static str,
    pub label: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'static str>,
}

#[derive(Clone, Debug, Serialize)]
pub struct ToolDecl {
    pub tool_id: String,
    pub profile: &'static str,
    pub title: String,
    pub description: String,
    pub related_skill_ids: Vec<&'static str>,
    pub input_schema: Value,
    pub output_schema: Value,
}

#[derive(Clone, Debug, Serialize)]
pub struct AuthFlow {
    pub id: &'static str,
    pub target_type: &'static str,
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub title: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'static str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<AuthField>,
}

#[derive(Clone, Debug, Serialize)]
pub struct AuthField {
    pub name: &'static str,
    pub label: &'static str,
    pub input_type: &'static str,
    pub required: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub help_text: Option<&'static str>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Security {
    pub trust_level: &'static str,
    pub api_key_required: bool,
    pub data_classes: Vec<&'static str>,
}

/// The one helper that injects the reserved `connector_channel_id` argument into a tool's input schema
/// (§10: "input_schema 必须通过协议层 helper ... 注入标准 connector_channel_id 参数"). It is placed first in
/// `required`, and replaces any hand-written declaration of the same name.
pub fn with_connector_channel_id(schema: Value) -> Value {
    let mut schema = match schema {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    };
    schema.insert("type".into(), json!("object"));
    let props = schema.entry("properties").or_insert_with(|| json!({}));
    if !props.is_object() {
        *props = json!({});
    }
    let props = props.as_object_mut().expect("just ensured");
    let mut new_props = serde_json::Map::new();
    // No prose: §4.2 requires only the property, its type and its place in `required`; xAgent fills the value
    // from the channel the model works in, and a description repeated in every tool costs ~1 KB of every
    // model's context (issue 35).
    new_props.insert("connector_channel_id".into(), json!({"type": "string"}));
    for (k, v) in std::mem::take(props) {
        if k != "connector_channel_id" {
            new_props.insert(k, v);
        }
    }
    *props = new_props;
    let mut required = vec![json!("connector_channel_id")];
    if let Some(Value::Array(old)) = schema.get("required") {
        required.extend(old.iter().filter(|v| v.as_str() != Some("connector_channel_id")).cloned());
    }
    schema.insert("required".into(), Value::Array(required));
    Value::Object(schema)
}

/// The inverse of [`with_connector_channel_id`]: a card input schema as a client that never names a channel sees it
/// (the MCP endpoint's `tools/list`: one MCP session is one channel, so the argument is the endpoint's to fill in).
pub fn without_connector_channel_id(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        props.remove("connector_channel_id");
    }
    if let Some(Value::Array(req)) = schema.get_mut("required") {
        req.retain(|v| v.as_str() != Some("connector_channel_id"));
    }
    schema
}

/// `^[A-Za-z0-9_.-]{1,256}$` (§4.1): tool ids become model function names.
pub fn is_valid_tool_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// Skill names: lower-case hyphen-case ASCII (§4.2).
pub fn is_valid_skill_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.ends_with('-')
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// Every hard rule of §4.1 (and the "禁止" list where it is checkable) that JSON Schema cannot express.
/// Returns one line per violation; empty means the card is valid.
pub fn validate(card: &Card, main_skill: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if card.connector_card_id.is_empty() {
        errs.push("connector_card_id is required".into());
    }
    if card.connector.name.is_empty() || card.connector.version.is_empty() {
        errs.push("connector.name and connector.version are required".into());
    }
    if card.supports.target_types.is_empty() {
        errs.push("supports.target_types must not be empty".into());
    }
    for t in &card.supports.target_types {
        if !TARGET_TYPES.contains(t) {
            errs.push(format!("supports.target_types has unknown type {t}"));
        }
    }
    if card.supports.profiles.is_empty() {
        errs.push("supports.profiles must not be empty".into());
    }
    for p in &card.supports.profiles {
        match PROFILE_TARGET_TYPES.iter().find(|(id, _)| id == p) {
            Some((_, allowed)) if allowed.iter().any(|t| card.supports.target_types.contains(t)) => {}
            Some(_) => errs.push(format!("profile {p} shares no target type with supports.target_types")),
            None => errs.push(format!("profile {p} is not a standard profile")),
        }
    }
    for t in &card.supports.targets {
        if !card.supports.target_types.contains(&t.target_type) {
            errs.push(format!("supports.targets has target_type {} not in supports.target_types", t.target_type));
        }
    }
    let mut seen = HashSet::new();
    for tool in &card.tools {
        let id = &tool.tool_id;
        if !is_valid_tool_id(id) {
            errs.push(format!("tool_id {id:?} must match ^[A-Za-z0-9_.-]{{1,256}}$"));
        }
        if !seen.insert(id.clone()) {
            errs.push(format!("tool_id {id} is declared twice"));
        }
        if !card.supports.profiles.contains(&tool.profile) {
            errs.push(format!("tool {id}: profile {} is not in supports.profiles", tool.profile));
        }
        for s in &tool.related_skill_ids {
            if !is_valid_skill_name(s) || !(*s == main_skill || s.starts_with(&format!("{main_skill}-"))) {
                errs.push(format!("tool {id}: related skill {s} is neither {main_skill} nor {main_skill}-<suffix>"));
            }
        }
        let schema = &tool.input_schema;
        if schema.get("type") != Some(&json!("object")) {
            errs.push(format!("tool {id}: input_schema must be an object schema"));
        }
        if schema.pointer("/properties/connector_channel_id/type") != Some(&json!("string")) {
            errs.push(format!("tool {id}: input_schema.properties.connector_channel_id must be a string"));
        }
        let required = schema.get("required").and_then(Value::as_array);
        if !required.is_some_and(|r| r.contains(&json!("connector_channel_id"))) {
            errs.push(format!("tool {id}: input_schema.required must contain connector_channel_id"));
        }
        // "不要在工具 schema 中声明 connector_card_id 模型参数"; secrets never go into schemas (§10).
        for forbidden in ["connector_card_id", "api_key", "serial"] {
            if schema.pointer(&format!("/properties/{forbidden}")).is_some() {
                errs.push(format!("tool {id}: input_schema must not declare `{forbidden}`"));
            }
        }
        if !tool.output_schema.is_object() {
            errs.push(format!("tool {id}: output_schema must be an object"));
        }
    }
    let mut flow_ids = HashSet::new();
    for f in &card.auth_flows {
        if !flow_ids.insert(f.id) {
            errs.push(format!("auth flow {} is declared twice", f.id));
        }
        if !card.supports.target_types.contains(&f.target_type) {
            errs.push(format!("auth flow {}: target_type {} not in supports.target_types", f.id, f.target_type));
        }
        if f.kind == "form" && f.fields.is_empty() {
            errs.push(format!("auth flow {}: a form flow needs at least one field", f.id));
        }
        let mut names = HashSet::new();
        for field in &f.fields {
            if !names.insert(field.name) {
                errs.push(format!("auth flow {}: field {} is declared twice", f.id, field.name));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helper_injects_required_string_channel_id_first() {
        let s = with_connector_channel_id(json!({
            "type": "object",
            "properties": {"x": {"type": "integer"}, "connector_channel_id": {"type": "integer"}},
            "required": ["x", "connector_channel_id"],
            "additionalProperties": false
        }));
        assert_eq!(s["properties"]["connector_channel_id"]["type"], "string");
        assert_eq!(s["required"], json!(["connector_channel_id", "x"]));
        assert_eq!(s["properties"].as_object().unwrap().keys().next().unwrap(), "connector_channel_id");
        assert_eq!(s["additionalProperties"], false);
        let empty = with_connector_channel_id(json!({}));
        assert_eq!(empty["required"], json!(["connector_channel_id"]));
        assert_eq!(empty["type"], "object");
    }

    #[test]
    fn tool_id_rule() {
        assert!(is_valid_tool_id("android_tap"));
        assert!(is_valid_tool_id("a.b-c_9"));
        assert!(!is_valid_tool_id(""));
        assert!(!is_valid_tool_id("android tap"));
        assert!(!is_valid_tool_id("安卓"));
        assert!(!is_valid_tool_id(&"a".repeat(257)));
        assert!(is_valid_tool_id(&"a".repeat(256)));
    }

    #[test]
    fn skill_name_rule() {
        assert!(is_valid_skill_name("connector-device-adb"));
        assert!(!is_valid_skill_name("Connector-Device"));
        assert!(!is_valid_skill_name("connector_device"));
    }
}

#[cfg(test)]
mod cross_rules {
    //! Every §4.1 cross-rule, each broken on purpose on the production card.
    use super::*;
    use crate::channels::Hub;
    use crate::device::adb::AdbBackend;
    use crate::protocol::SKILL_NAME;
    use crate::tools::Registry;

    fn card() -> Card {
        let adb = AdbBackend::new(Vec::new());
        Hub::build_card(&Registry::device_tools(&adb), adb.as_ref(), true)
    }

    fn broken(f: impl FnOnce(&mut Card), needle: &str) {
        let mut c = card();
        f(&mut c);
        let errs = validate(&c, SKILL_NAME);
        assert!(errs.iter().any(|e| e.contains(needle)), "expected a violation mentioning {needle:?}, got {errs:?}");
    }

    #[test]
    fn the_production_card_is_valid() {
        let c = card();
        assert_eq!(validate(&c, SKILL_NAME), Vec::<String>::new());
        assert!(c.tools.len() >= 10);
        assert!(c.tools.iter().all(|t| t.related_skill_ids == vec![SKILL_NAME] && t.profile == "xagent.device.v1"));
    }

    #[test]
    fn each_rule_is_enforced() {
        broken(|c| c.connector_card_id = "", "connector_card_id is required");
        broken(|c| c.connector.name = "", "connector.name");
        broken(|c| c.supports.target_types.clear(), "target_types must not be empty");
        broken(|c| c.supports.target_types = vec!["phone"], "unknown type phone");
        broken(|c| c.supports.profiles.clear(), "profiles must not be empty");
        broken(|c| c.supports.profiles.push("xagent.im.v2"), "profile xagent.im.v2 shares no target type");
        broken(|c| c.supports.profiles.push("acme.custom"), "not a standard profile");
        broken(|c| c.supports.targets[0].target_type = "im", "supports.targets has target_type im");
        broken(|c| c.tools[0].tool_id = "bad id".into(), "must match");
        broken(|c| c.tools[1].tool_id = c.tools[0].tool_id.clone(), "declared twice");
        broken(|c| c.tools[0].profile = "xagent.im.v2", "is not in supports.profiles");
        broken(|c| c.tools[0].related_skill_ids = vec!["android-device-control"], "related skill");
        broken(|c| c.tools[0].input_schema["type"] = json!("array"), "object schema");
        broken(
            |c| c.tools[0].input_schema["properties"]["connector_channel_id"]["type"] = json!("integer"),
            "must be a string",
        );
        broken(|c| c.tools[0].input_schema["required"] = json!([]), "required must contain connector_channel_id");
        broken(
            |c| c.tools[0].input_schema["properties"]["connector_card_id"] = json!({"type": "string"}),
            "connector_card_id",
        );
        broken(|c| c.tools[0].output_schema = json!(true), "output_schema");
        broken(|c| c.auth_flows.push(c.auth_flows[0].clone()), "auth flow adb_device is declared twice");
        broken(|c| c.auth_flows[0].target_type = "im", "target_type im not in");
        broken(|c| c.auth_flows[0].fields.clear(), "form flow needs at least one field");
    }
}
