//! What a phone's helper report tells people (issue 46 item 5): the one-line [`summary`] the wall and `doctor`
//! show, and the [`attention`] items — a phone whose injection the system refuses (Xiaomi's "USB debugging
//! (Security settings)" off: where the toggle is), a phone where typed text was not seen arriving (unverified:
//! Samsung One UI's stale paste, helper D4), the helper not running there, and which operations use the shell path
//! and why — each with what the operator can do. Pure functions of the report `Helpers::report` builds.

use serde_json::{json, Value};

/// The start of the reason a refused injection is kept under (`helper.rs`, the `denied` answer of an injecting verb).
pub(super) const REFUSED: &str = "denied: the system refused injection";

/// Where Xiaomi's toggle is, and what it asks for (the field reports: scrcpy's README "On some devices (especially
/// Xiaomi), you might get the following error: … INJECT_EVENTS permission … you might also need to enable USB
/// debugging (Security settings)"; the note `helper-vs-real-android.md` §2.1 and D3).
pub(super) const XIAOMI_TOGGLE: &str =
    "Xiaomi/Redmi/POCO: turn on Settings > Additional settings > Developer options > \
                                        \"USB debugging (Security settings)\" (it asks for a SIM card and a Mi account \
                                        sign-in); other phones: look in Developer options for an input or security \
                                        toggle";

/// One line of the report for people (`doctor`, the wall).
pub fn summary(report: &Value) -> String {
    let state = report["state"].as_str().unwrap_or("unknown");
    let mut s = match (state, report["version"].as_str()) {
        ("running", Some(v)) => format!("running (helper {v})"),
        (st, _) => st.replace('_', " "),
    };
    if let Some(r) = report["reason"].as_str() {
        s.push_str(&format!(": {r}"));
    }
    if let Some(fb) = report["fell_back"].as_object() {
        let list: Vec<String> = fb.iter().map(|(k, v)| format!("{k} ({})", v.as_str().unwrap_or(""))).collect();
        s.push_str(&format!("; shell path for {}", list.join(", ")));
    }
    if report["injection"] == "unverified" {
        s.push_str("; typed text unverified");
    }
    s
}

/// Whether injection works on the phone, as far as the helper has seen: `refused` (an injecting verb was answered
/// `denied`), `unverified` (a paste the helper called done did not show in the field), `ok` (an input was
/// answered), `untested` (none yet). `None` when the helper is off or down (the shell path's `input` answers for
/// itself there).
pub(super) fn injection(
    fallbacks: &serde_json::Map<String, Value>,
    unseen_pastes: u64,
    inputs_ok: u64,
) -> &'static str {
    if fallbacks.values().any(|r| r.as_str().is_some_and(|r| r.starts_with(REFUSED))) {
        "refused"
    } else if unseen_pastes > 0 {
        "unverified"
    } else if inputs_ok > 0 {
        "ok"
    } else {
        "untested"
    }
}

/// What the operator should know and do about one phone's helper: `{problem, message, action}` items, the
/// phone's worst first. `problem` is `injection_refused`, `input_unverified`, `helper_unavailable` or
/// `shell_fallback` (one item per operation that fell back for good, with its reason).
pub fn attention(report: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    let fell_back = report["fell_back"].as_object().cloned().unwrap_or_default();
    let refused: Vec<&str> = fell_back
        .iter()
        .filter(|(_, r)| r.as_str().is_some_and(|r| r.starts_with(REFUSED)))
        .map(|(v, _)| v.as_str())
        .collect();
    if !refused.is_empty() {
        out.push(json!({
            "problem": "injection_refused",
            "message": format!(
                "the phone refuses injected input (the helper's {} answered `denied`, a SecurityException for \
                 INJECT_EVENTS): these go through the shell's `input` now, which such a phone may refuse as well",
                refused.join(", ")
            ),
            "action": XIAOMI_TOGGLE,
        }));
    }
    if report["injection"] == "unverified" {
        let n = report["unseen_pastes"].as_u64().unwrap_or(1);
        out.push(json!({
            "problem": "input_unverified",
            "message": format!(
                "{n} pasted text(s) did not show in the field after the helper answered `paste restored`: this \
                 phone may paste an earlier clip (Samsung One UI 9–11, scrcpy #1771, #1986, #2277); agents are \
                 warned on each such call"
            ),
            "action": "check the phone's clipboard: copy something on it and paste it by hand; if an earlier clip \
                       comes out, prefer ASCII text on this phone (typed as keys, not pasted), or run the connector \
                       with --phone-helper off and ADB Keyboard installed",
        }));
    }
    if report["state"] == "unavailable" {
        out.push(json!({
            "problem": "helper_unavailable",
            "message": format!(
                "the phone helper does not run here ({}): every operation uses the shell path (slower; no clipboard \
                 tool, no multi-touch)",
                report["reason"].as_str().unwrap_or("unknown")
            ),
            "action": "nothing is needed for the phone to work; reconnecting it (or restarting the connector) \
                       tries the helper again",
        }));
    }
    for (verb, why) in &fell_back {
        if refused.contains(&verb.as_str()) {
            continue;
        }
        out.push(json!({
            "problem": "shell_fallback",
            "message": format!("`{verb}` uses the shell path: {}", why.as_str().unwrap_or("")),
            "action": "nothing is needed: the shell path does the same, slower; reconnecting the phone tries the \
                       helper again",
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_summary_says_what_fell_back() {
        let r = json!({"state": "running", "version": "2", "fell_back": {"touch": "denied: x"}});
        assert_eq!(summary(&r), "running (helper 2); shell path for touch (denied: x)");
        assert_eq!(summary(&json!({"state": "off", "reason": "--phone-helper off"})), "off: --phone-helper off");
        let r = json!({"state": "running", "version": "4", "injection": "unverified"});
        assert_eq!(summary(&r), "running (helper 4); typed text unverified");
    }

    #[test]
    fn a_refused_injection_names_the_toggle_and_other_fallbacks_their_reason() {
        let refused = format!("{REFUSED} (…)");
        let r = json!({"state": "running", "fell_back": {"tap": refused, "key": refused, "tree": "unavailable: no_uiautomation"}});
        let a = attention(&r);
        assert_eq!(a.len(), 2, "{a:?}");
        assert_eq!(a[0]["problem"], "injection_refused");
        assert!(a[0]["message"].as_str().unwrap().contains("key, tap"), "{a:?}");
        assert!(a[0]["action"].as_str().unwrap().contains("\"USB debugging (Security settings)\""));
        assert_eq!(a[1]["problem"], "shell_fallback");
        assert!(a[1]["message"].as_str().unwrap().contains("`tree` uses the shell path: unavailable: no_uiautomation"));
        assert!(attention(&json!({"state": "running", "injection": "ok"})).is_empty());
        let fb = |r: &str| json!({"tap": r}).as_object().cloned().unwrap();
        assert_eq!(injection(&fb(&refused), 1, 3), "refused");
        assert_eq!(injection(&fb("failed: x"), 1, 3), "unverified");
        assert_eq!(injection(&fb("failed: x"), 0, 3), "ok");
        assert_eq!(injection(&fb("failed: x"), 0, 0), "untested");
    }
}
