//! Validation of tool arguments against the tool's own `input_schema`: the schema served in the card is the
//! contract, so the same value is the validator's input (no second, drifting definition).
//!
//! Only the JSON Schema subset our tools use is implemented; `Registry::new` refuses a tool whose schema uses any
//! other keyword, so a schema can never silently be validated less strictly than it reads.

use serde_json::Value;

/// Keywords this validator understands. Annotation-only keywords are listed so they are accepted.
const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "items",
    "minItems",
    "maxItems",
    // annotations
    "description",
    "title",
    "default",
    "examples",
];

/// Checks that `schema` only uses keywords this validator enforces. `Err` names the first offender.
pub fn check_supported(schema: &Value, path: &str) -> Result<(), String> {
    let Value::Object(m) = schema else {
        return Err(format!("{path}: a schema must be an object"));
    };
    for (k, v) in m {
        if !KEYWORDS.contains(&k.as_str()) {
            return Err(format!("{path}: unsupported schema keyword `{k}`"));
        }
        match k.as_str() {
            "properties" => {
                let props = v.as_object().ok_or_else(|| format!("{path}: properties must be an object"))?;
                for (name, sub) in props {
                    check_supported(sub, &format!("{path}.{name}"))?;
                }
            }
            "items" => check_supported(v, &format!("{path}[]"))?,
            _ => {}
        }
    }
    Ok(())
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn matches_type(expected: &str, v: &Value) -> bool {
    let actual = type_name(v);
    expected == actual
        || (expected == "number" && actual == "integer")
        // 3.0 is an integer in JSON Schema's data model.
        || (expected == "integer" && v.as_f64().is_some_and(|f| f.fract() == 0.0 && f.is_finite()))
}

/// Enum members an error lists in full; a longer enum of names answers with the nearest three.
const LISTED_ENUM: usize = 8;

/// A client's value as an error quotes it: at most 64 characters.
fn cut(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 64 {
        format!("{}…", s.chars().take(64).collect::<String>())
    } else {
        s
    }
}

/// Prefixes a name in a string enum may carry in the client's spelling: Android's own key names
/// (`KEYCODE_BACK` for `BACK`).
const NAME_PREFIXES: &[&str] = &["KEYCODE_"];

/// Makes `value` what `schema` asks for where the client's meaning is unambiguous, before [`validate`]: a numeric
/// string for an integer or number that takes no string (`"540"` → 540), a string enum member in any case or with
/// a [`NAME_PREFIXES`] prefix when exactly one member is meant (`"back"`, `"KEYCODE_BACK"` → `"BACK"`). Anything else
/// is left for [`validate`] to refuse with its message.
pub fn coerce(schema: &Value, value: &mut Value) {
    let types: Vec<&str> = match schema.get("type") {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    match value {
        Value::String(s) if !types.contains(&"string") => {
            let t = s.trim();
            if types.contains(&"integer") {
                if let Ok(n) = t.parse::<i64>() {
                    *value = Value::from(n);
                    return;
                }
            }
            if types.contains(&"number") {
                if let Some(n) = t.parse::<f64>().ok().and_then(serde_json::Number::from_f64) {
                    *value = Value::Number(n);
                }
            }
        }
        Value::String(s) => {
            let Some(Value::Array(allowed)) = schema.get("enum") else { return };
            if allowed.iter().any(|a| a.as_str() == Some(s.as_str())) {
                return;
            }
            let bare = NAME_PREFIXES
                .iter()
                .find_map(|p| s.get(..p.len()).filter(|h| h.eq_ignore_ascii_case(p)).map(|_| &s[p.len()..]))
                .unwrap_or(s.as_str());
            let meant: Vec<&str> =
                allowed.iter().filter_map(Value::as_str).filter(|a| a.eq_ignore_ascii_case(bare)).collect();
            if let [one] = meant.as_slice() {
                *value = Value::from(*one);
            }
        }
        Value::Object(m) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in m.iter_mut() {
                    if let Some(sub) = props.get(k) {
                        coerce(sub, v);
                    }
                }
            }
        }
        Value::Array(a) => {
            if let Some(items) = schema.get("items") {
                a.iter_mut().for_each(|v| coerce(items, v));
            }
        }
        _ => {}
    }
}

/// Validates `value` against `schema`. The error names the argument path (`x`, `keys[2]`) and says what was
/// expected and what came, so an agent can correct its call.
pub fn validate(schema: &Value, value: &Value, path: &str) -> Result<(), String> {
    let at = |p: &str| if p.is_empty() { "arguments".to_owned() } else { format!("argument `{p}`") };
    if let Some(t) = schema.get("type") {
        let ok = match t {
            Value::String(s) => matches_type(s, value),
            Value::Array(list) => list.iter().filter_map(Value::as_str).any(|s| matches_type(s, value)),
            _ => true,
        };
        if !ok {
            return Err(format!(
                "{} must be of type {}, got {}",
                at(path),
                t.to_string().replace('"', ""),
                type_name(value)
            ));
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        if !allowed.contains(value) {
            let names: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
            if allowed.len() > LISTED_ENUM && names.len() == allowed.len() {
                // A long list costs an agent's context and hides the name it meant: the nearest three.
                let given = value.as_str().map_or_else(|| value.to_string(), str::to_owned);
                let hint = super::suggest::did_you_mean(&given, names.iter().copied());
                let got = cut(value);
                return Err(format!("{} must be one of {} names ({hint}), got {got}", at(path), allowed.len()));
            }
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(format!("{} must be one of {}, got {}", at(path), list.join(", "), cut(value)));
        }
    }
    if let Some(n) = value.as_f64() {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64) {
            if n < min {
                return Err(format!("{} must be ≥ {min}, got {value}", at(path)));
            }
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64) {
            if n > max {
                return Err(format!("{} must be ≤ {max}, got {value}", at(path)));
            }
        }
    }
    if let Some(s) = value.as_str() {
        let len = s.chars().count() as u64;
        if let Some(min) = schema.get("minLength").and_then(Value::as_u64) {
            if len < min {
                return Err(format!("{} must have at least {min} characters, got {len}", at(path)));
            }
        }
        if let Some(max) = schema.get("maxLength").and_then(Value::as_u64) {
            if len > max {
                return Err(format!("{} must have at most {max} characters, got {len}", at(path)));
            }
        }
    }
    if let Some(items) = value.as_array() {
        let n = items.len() as u64;
        if let Some(min) = schema.get("minItems").and_then(Value::as_u64) {
            if n < min {
                return Err(format!("{} must have at least {min} items, got {n}", at(path)));
            }
        }
        if let Some(max) = schema.get("maxItems").and_then(Value::as_u64) {
            if n > max {
                return Err(format!("{} must have at most {max} items, got {n}", at(path)));
            }
        }
        if let Some(item_schema) = schema.get("items") {
            for (i, item) in items.iter().enumerate() {
                validate(item_schema, item, &format!("{path}[{i}]"))?;
            }
        }
    }
    if let Some(obj) = value.as_object() {
        let props = schema.get("properties").and_then(Value::as_object);
        let join = |k: &str| if path.is_empty() { k.to_owned() } else { format!("{path}.{k}") };
        if let Some(Value::Array(required)) = schema.get("required") {
            for r in required.iter().filter_map(Value::as_str) {
                if !obj.contains_key(r) {
                    return Err(format!("{} is required", at(&join(r))));
                }
            }
        }
        for (k, v) in obj {
            match props.and_then(|p| p.get(k)) {
                Some(sub) => validate(sub, v, &join(k))?,
                None if schema.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    let known: Vec<&str> = props.map(|p| p.keys().map(String::as_str).collect()).unwrap_or_default();
                    return Err(format!(
                        "{} is not a parameter of this tool (known: {})",
                        at(&join(k)),
                        known.join(", ")
                    ));
                }
                None => {}
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "required": ["connector_channel_id", "x"],
            "additionalProperties": false,
            "properties": {
                "connector_channel_id": {"type": "string"},
                "x": {"type": "integer", "minimum": 0, "maximum": 100},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "text": {"type": "string", "minLength": 1, "maxLength": 3},
                "keys": {"type": "array", "maxItems": 2, "items": {"type": "string", "minLength": 1}}
            }
        })
    }

    fn err(v: Value) -> String {
        validate(&schema(), &v, "").unwrap_err()
    }

    #[test]
    fn accepts_valid_arguments() {
        validate(&schema(), &json!({"connector_channel_id": "c", "x": 5, "mode": "a", "keys": ["k"]}), "").unwrap();
        validate(&schema(), &json!({"connector_channel_id": "c", "x": 5.0}), "").unwrap();
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(err(json!({"connector_channel_id": "c"})), "argument `x` is required");
        assert!(err(json!({"connector_channel_id": "c", "x": "5"}))
            .starts_with("argument `x` must be of type integer, got string"));
        assert!(err(json!({"connector_channel_id": "c", "x": 101})).contains("argument `x` must be ≤ 100"));
        assert!(err(json!({"connector_channel_id": "c", "x": -1})).contains("≥ 0"));
        assert!(err(json!({"connector_channel_id": "c", "x": 1.5})).contains("integer"));
        assert!(
            err(json!({"connector_channel_id": "c", "x": 1, "mode": "z"})).contains("argument `mode` must be one of")
        );
        assert!(err(json!({"connector_channel_id": "c", "x": 1, "text": ""})).contains("at least 1"));
        assert!(err(json!({"connector_channel_id": "c", "x": 1, "keys": ["a", ""]})).contains("argument `keys[1]`"));
        assert!(err(json!({"connector_channel_id": "c", "x": 1, "keys": ["a", "b", "c"]})).contains("at most 2 items"));
        assert!(err(json!({"connector_channel_id": "c", "x": 1, "serial": "abc"}))
            .contains("argument `serial` is not a parameter"));
        assert!(err(json!([1])).starts_with("arguments must be of type object"));
    }

    /// Issue 35 item 4: lenient where the meaning is unambiguous, the validator's message otherwise.
    #[test]
    fn numeric_strings_and_enum_spellings_are_taken_when_unambiguous() {
        let s = json!({"type": "object", "properties": {
            "x": {"type": "integer"}, "f": {"type": "number"}, "t": {"type": "string"},
            "key": {"type": "string", "enum": ["BACK", "HOME", "MOVE_HOME"]},
            "both": {"type": "string", "enum": ["a", "A"]},
            "el": {"type": "object", "properties": {"index": {"type": "integer"}}}}});
        let mut v = json!({"x": " 540 ", "f": "1.5", "t": "12", "key": "KEYCODE_back", "both": "a",
                           "el": {"index": "3"}});
        coerce(&s, &mut v);
        assert_eq!(v, json!({"x": 540, "f": 1.5, "t": "12", "key": "BACK", "both": "a", "el": {"index": 3}}));
        for (given, kept) in [("x", json!("5.5")), ("x", json!("five")), ("both", json!("B")), ("key", json!("HOM"))] {
            let mut v = json!({ given: kept.clone() });
            coerce(&s, &mut v);
            assert_eq!(v[given], kept, "{given} left for the validator");
        }
        let mut v = json!({"key": "home"});
        coerce(&s, &mut v);
        assert_eq!(v["key"], "HOME");
        // A long enum answers with three names, not all of them.
        let many: Vec<String> = (0..20).map(|i| format!("NAME_{i}")).chain(["HOME".to_owned()]).collect();
        let e = validate(&json!({"type": "string", "enum": many}), &json!("HOM"), "key").unwrap_err();
        assert!(e.starts_with("argument `key` must be one of 21 names (did you mean \"HOME\", "), "{e}");
        assert!(e.ends_with("?), got \"HOM\""), "{e}");
    }

    #[test]
    fn unsupported_keywords_are_refused() {
        check_supported(&schema(), "t").unwrap();
        let e =
            check_supported(&json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "x"}}}), "t");
        assert_eq!(e.unwrap_err(), "t.p: unsupported schema keyword `pattern`");
    }
}
