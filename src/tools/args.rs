//! Typed tool arguments: each tool's arguments are one `#[derive(Deserialize, JsonSchema)]` struct next to the tool.
//! The card's `input_schema` is derived from that struct ([`schema`]) and the tool reads its arguments by
//! deserializing into it ([`parse`]): one definition, so the schema an agent reads, the check the registry makes
//! and the values the tool uses cannot drift apart.
//!
//! The flow of one call: the registry validates the arguments against the served schema (`schema.rs`: messages
//! name the field and the allowed range), removes `connector_channel_id` (and whatever else the registry injects),
//! and the tool deserializes what is left. Deserialization after validation only fails for a rule the schema cannot
//! express; those checks stay in the tool with their own messages.
//!
//! Conventions for argument structs: `#[serde(deny_unknown_fields)]` (→ `additionalProperties: false`), doc
//! comments are the descriptions an agent reads (short: they are paid for in tokens on every conversation),
//! `#[schemars(range(..))]` / `#[schemars(length(..))]` for bounds, `#[serde(default = "…")]` for defaults (the
//! schema then shows the default), `Option<T>` for optional arguments without a default.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::protocol::errors::{ErrorCode, ProtoError};

/// The arguments of a tool that takes none (besides `connector_channel_id`): an empty object, nothing else.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

/// The input schema of `T` as the card serves it (before the registry injects `connector_channel_id`).
///
/// schemars' output is post-processed into the subset `schema.rs` enforces and every common model provider reads:
/// subschemas inlined (no `$ref`/`$defs`, which older Gemini function declarations refuse), no `$schema`, `title`
/// or `format` noise, and an optional argument (`Option<T>`) is just absent when not given: `null` is not accepted
/// for it (schemars would allow it; the validator would then let `null` through to a tool that never expects it).
pub fn schema<T: schemars::JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|s| s.inline_subschemas = true);
    let root = settings.into_generator().into_root_schema_for::<T>();
    let mut v = root.to_value();
    if let Value::Object(m) = &mut v {
        // The struct's own doc comment is for Rust readers; the tool's description is the card's.
        for k in ["$schema", "title", "description"] {
            m.remove(k);
        }
    }
    tidy(&mut v);
    if let Value::Object(m) = &mut v {
        // A struct without fields still takes an (empty) object.
        m.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    }
    v
}

/// Removes schemars noise recursively and makes optional properties non-nullable (see [`schema`]).
fn tidy(v: &mut Value) {
    let Value::Object(m) = v else { return };
    m.remove("format");
    m.remove("title");
    // Doc comments keep their line breaks; a description is one line of prose.
    if let Some(Value::String(d)) = m.get_mut("description") {
        *d = d.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    if let Some(Value::Object(props)) = m.get_mut("properties") {
        for p in props.values_mut() {
            drop_null(p);
            tidy(p);
        }
    }
    if let Some(items) = m.get_mut("items") {
        tidy(items);
    }
    if m.get("required").and_then(Value::as_array).is_some_and(Vec::is_empty) {
        m.remove("required");
    }
}

/// `{"type": ["integer", "null"]}` → `{"type": "integer"}`; `{"anyOf": [S, {"type": "null"}], …}` → S with the
/// siblings (`description`, `default`) kept.
fn drop_null(p: &mut Value) {
    let Value::Object(m) = p else { return };
    if let Some(Value::Array(types)) = m.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let t = types.remove(0);
            m.insert("type".into(), t);
        }
    }
    if let Some(Value::Array(alts)) = m.get("anyOf") {
        let rest: Vec<&Value> = alts.iter().filter(|a| a.get("type") != Some(&Value::from("null"))).collect();
        if let [Value::Object(only)] = rest.as_slice() {
            let only = only.clone();
            m.remove("anyOf");
            for (k, val) in only {
                m.entry(k).or_insert(val);
            }
        }
    }
    if m.get("default") == Some(&Value::Null) {
        m.remove("default");
    }
}

/// Deserializes validated arguments into the tool's argument struct. Integral floats (`5.0`, which the validator
/// accepts as an integer, as JSON Schema does) become integers first so that `u32` fields take them.
pub fn parse<T: DeserializeOwned>(args: &Map<String, Value>) -> Result<T, ProtoError> {
    let mut v = Value::Object(args.clone());
    integral(&mut v);
    serde_json::from_value(v).map_err(|e| ProtoError::new(ErrorCode::InvalidArguments, format!("arguments: {e}")))
}

fn integral(v: &mut Value) {
    match v {
        Value::Number(n) if !(n.is_i64() || n.is_u64()) => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15) {
                *v = Value::from(f as i64);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(integral),
        Value::Object(m) => m.values_mut().for_each(integral),
        _ => {}
    }
}

/// The default cap on listed elements (`android_ui_dump`, `android_observe`).
pub fn elements_300() -> u32 {
    300
}

#[cfg(test)]
mod tests {
    use super::*;
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    /// Inner doc.
    #[derive(Deserialize, JsonSchema, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        /// Some text
        #[schemars(length(min = 1, max = 5))]
        text: Option<String>,
    }

    fn five() -> u32 {
        5
    }

    /// Struct doc.
    #[derive(Deserialize, JsonSchema, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Example {
        /// A count
        #[schemars(range(min = 1, max = 9))]
        #[serde(default = "five")]
        n: u32,
        #[schemars(range(min = 0, max = 100))]
        x: Option<i64>,
        /// The inner one
        inner: Option<Inner>,
        must: String,
    }

    #[test]
    fn schema_is_the_subset_the_validator_enforces() {
        let s = schema::<Example>();
        assert_eq!(
            s,
            json!({"type": "object", "additionalProperties": false, "required": ["must"], "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": 9, "default": 5, "description": "A count"},
                "x": {"type": "integer", "minimum": 0, "maximum": 100},
                "inner": {"type": "object", "additionalProperties": false, "description": "The inner one",
                          "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 5,
                                                  "description": "Some text"}}},
                "must": {"type": "string"}}})
        );
        crate::tools::schema::check_supported(&s, "example").unwrap();
        assert!(crate::tools::schema::validate(&s, &json!({"must": "m", "x": null}), "").is_err(), "null refused");
    }

    /// The messages of the validator running on derived schemas still name the field and the allowed range.
    #[test]
    fn derived_schemas_keep_the_validators_messages() {
        let adb = crate::device::adb::AdbBackend::new(Vec::new());
        let reg = crate::tools::Registry::device_tools(&adb);
        let err = |tool: &str, args: Value| {
            let mut a = args;
            a["connector_channel_id"] = json!("cch");
            match reg.prepare(tool, &a) {
                Err(e) => e.message,
                Ok(_) => panic!("{tool} accepted {a}"),
            }
        };
        assert_eq!(err("android_screenshot", json!({"quality": 101})), "argument `quality` must be ≤ 100, got 101");
        assert_eq!(err("android_tap", json!({"x": -1, "y": 5})), "argument `x` must be ≥ 0, got -1");
        assert!(err("android_logcat", json!({"priority": "Z"})).starts_with("argument `priority` must be one of \"V\""));
        assert!(err("android_scroll", json!({})).contains("argument `direction` is required"));
        assert!(
            err("android_tap", json!({"element": {"txt": "OK"}})).contains("argument `element.txt` is not a parameter")
        );
        assert!(err("android_key", json!({"key": "HOM"})).contains("argument `key` must be one of"));
        assert!(
            err("android_ui_wait", json!({"text": null})).contains("argument `text` must be of type string, got null")
        );
        assert!(err("android_device_status", json!({"x": 1})).contains("argument `x` is not a parameter"));
    }

    #[test]
    fn parse_takes_integral_floats_and_defaults() {
        let a: Example = parse(json!({"must": "m", "x": 3.0}).as_object().unwrap()).unwrap();
        assert_eq!((a.n, a.x), (5, Some(3)));
    }
}
