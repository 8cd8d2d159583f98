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
            let list: Vec<String> = allowed.iter().map(Value::to_string).collect();
            return Err(format!("{} must be one of {}, got {}", at(path), list.join(", "), value));
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

    #[test]
    fn unsupported_keywords_are_refused() {
        check_supported(&schema(), "t").unwrap();
        let e =
            check_supported(&json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "x"}}}), "t");
        assert_eq!(e.unwrap_err(), "t.p: unsupported schema keyword `pattern`");
    }
}
