//! What the pointer tools (input.rs, gesture.rs) share about an action and its result: the coordinate bound,
//! and the `woke`, `element` and `re_resolved` parts of what they answer.

use serde_json::{json, Value};

use super::element::element_schema;
use super::target::Resolved;

/// A coordinate argument: device pixels; the screen's own size is checked before acting.
pub(super) const MAX_COORD: i64 = 100_000;

/// `woke` in an input tool's result: the phone was asleep and was woken before the input (policy auto_wake).
pub(super) fn woke_schema() -> Value {
    json!({"type": "boolean"})
}

/// Adds `woke: true` to a result when the gate woke the phone.
pub(super) fn with_woke(mut v: Value, woke: bool) -> Value {
    if woke {
        v["woke"] = json!(true);
    }
    v
}

/// The schema of the `element` part of an action's result: the element as it was right before the action.
pub(super) fn acted_schema() -> Value {
    element_schema(false)
}

pub(super) fn re_resolved_schema() -> Value {
    json!({"type": "boolean"})
}

/// Adds which element was acted on to an action's result.
pub(super) fn with_element(mut v: Value, on: Option<Resolved>) -> Value {
    if let Some(r) = on {
        v["element"] = r.to_json();
        v["re_resolved"] = json!(r.re_resolved);
    }
    v
}
