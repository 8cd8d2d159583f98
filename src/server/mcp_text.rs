//! The text an MCP client's model reads of a result (issue 49: lean by default, complete on request). A result with
//! an element list (`android_observe`, `android_ui_dump`, …) reads as its other fields in JSON, then one line per
//! element — `#3 Button "Increment" desc="Increment counter" id=increment [337,900,742,1056] clickable marked` —
//! with the package said once (`package` in the JSON; `pkg=` on an element of another one), resource ids without
//! the `package:id/` prefix most of them share (`id_prefix` in the JSON), and no `center` (the middle of `bounds`, as the tools compute it).
//! Every other field of an element is kept (`key=value`), so nothing is lost; `structuredContent` carries the full
//! JSON for clients that read it. The JSON part leaves out what it would say twice or what holds its everyday value
//! (`quiet`, `said_already`). Any other result is its JSON.

use serde_json::{Map, Value};

/// What the JSON part names the list with: the line format, said once.
const LEGEND: &str = "one per line below: #index class \"text\" desc= id=(after id_prefix) [l,t,r,b] flags";

/// A top-level field left out of the text when it holds its everyday value (a model learns nothing from it;
/// `structuredContent` keeps it): a picture that shows the screen, a list not cut, a tree that was read, no rotation,
/// a phone on, unlocked, upright and without its keyboard, and a tree of the one focused app window. What stays is
/// what differs from a plain look at a phone in use — the values an agent has to act on.
fn quiet(k: &str, v: &Value) -> bool {
    match k {
        "frame_blank" | "truncated" | "keyboard_shown" | "locked" => v == &Value::Bool(false),
        "ui_available" | "screen_on" => v == &Value::Bool(true),
        "rotation_degrees" => v.as_u64() == Some(0),
        "frame" => v == "ok",
        "orientation" => v == "portrait",
        "tree" => {
            let windows = v.get("windows").and_then(Value::as_array);
            let plain = |w: &Value| w["type"] == "application" && w["focused"] == true;
            v["state"] == "ok" && windows.is_none_or(|ws| ws.len() <= 1 && ws.iter().all(plain))
        }
        _ => false,
    }
}

/// The element lists a result may carry, by path: an observation's, and an action's `effect.tree` delta.
const LISTS: &[&[&str]] = &[
    &["elements"],
    &["effect", "tree", "appeared"],
    &["effect", "tree", "disappeared"],
    &["effect", "tree", "changed"],
];

fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

fn at_mut<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |v, k| v.get_mut(*k))
}

/// The text of `result` for the model.
pub fn render(result: &Value) -> String {
    if !result.is_object() {
        return result.to_string();
    }
    // An action's effect counts the soft keyboard's keys that came with it rather than listing them
    // (`keyboard_shown` says it came; android_ui_dump lists them; structuredContent keeps them).
    let ime: Vec<i64> = at(result, &["effect", "tree", "windows"])
        .and_then(Value::as_array)
        .map(|ws| ws.iter().enumerate().filter(|(_, w)| w["type"] == "input_method").map(|(i, _)| i as i64).collect())
        .unwrap_or_default();
    let is_key = |e: &Value| e.get("window").and_then(Value::as_i64).is_some_and(|w| ime.contains(&w));
    // The lists present, each all objects (anything else stays JSON), and the keys left out of each.
    let lists: Vec<(&[&str], Vec<&Value>, usize)> = LISTS
        .iter()
        .filter_map(|p| match at(result, p) {
            Some(Value::Array(a)) if a.iter().all(Value::is_object) => {
                let effect = p[0] == "effect";
                let kept: Vec<&Value> = a.iter().filter(|e| !(effect && is_key(e))).collect();
                let keys = a.len() - kept.len();
                Some((*p, kept, keys))
            }
            _ => None,
        })
        .collect();
    if lists.iter().all(|(_, a, keys)| a.is_empty() && *keys == 0) {
        return result.to_string();
    }
    let all = || lists.iter().flat_map(|(_, a, _)| a.iter().copied());
    let package = result
        .get("package")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| most_common(all().filter_map(|e| e.get("package").and_then(Value::as_str))))
        .unwrap_or_default();
    let ids = most_common(all().filter_map(|e| {
        let id = e.get("resource_id").and_then(Value::as_str)?;
        id.find(":id/").map(|at| &id[..at + 4])
    }));
    let mut head = result.clone();
    // An empty list stays `[]`; the first one listed below carries the line format.
    for (n, (path, a, _)) in lists.iter().filter(|(_, a, _)| !a.is_empty()).enumerate() {
        let said = if n == 0 { LEGEND.to_owned() } else { format!("{} below, as elements", a.len()) };
        if let Some(v) = at_mut(&mut head, path) {
            *v = Value::String(said);
        }
    }
    for (path, a, keys) in lists.iter().filter(|(_, _, keys)| *keys > 0) {
        if let Some(Value::String(v)) = at_mut(&mut head, path) {
            v.push_str(&format!("; {keys} keyboard keys not listed (android_ui_dump lists them)"));
        } else if let (Some(v), true) = (at_mut(&mut head, path), a.is_empty()) {
            *v = Value::String(format!("{keys} keyboard keys, not listed (android_ui_dump lists them)"));
        }
    }
    if let Value::Object(h) = &mut head {
        // Said once: `package`, unless the foreground app is it already.
        let said =
            ["package", "foreground_package"].iter().any(|k| h.get(*k).and_then(Value::as_str) == Some(&package));
        if !package.is_empty() && !said {
            h.insert("package".into(), Value::String(package.clone()));
        }
        if let Some(p) = &ids {
            h.insert("id_prefix".into(), Value::String(p.clone()));
        }
        h.retain(|k, v| !quiet(k, v));
        said_already(h);
    }
    let mut out = head.to_string();
    for (path, a, _) in &lists {
        if a.is_empty() {
            continue;
        }
        if *path != ["elements"] {
            out.push_str(&format!("\n{}:", path.join(".")));
        }
        for e in a.iter().filter_map(|e| e.as_object()) {
            out.push('\n');
            out.push_str(&line(e, &package, ids.as_deref().unwrap_or("\0")));
        }
    }
    out
}

/// What the head says twice, said once in the text: the foreground activity's package prefix (`.Main` as Android
/// writes it), a window's package when it is the foreground one and its bounds when they are the whole screen.
fn said_already(h: &mut Map<String, Value>) {
    let fg = h.get("foreground_package").and_then(Value::as_str).map(str::to_owned);
    if let (Some(p), Some(Value::String(a))) = (&fg, h.get_mut("foreground_activity")) {
        if let Some(rest) = a.strip_prefix(p.as_str()).filter(|r| r.starts_with('.')) {
            *a = rest.to_owned();
        }
    }
    // An action's effect: `foreground` as Android's short component name (`pkg/.Activity`), its tree's windows
    // without the foreground package and everyday values.
    if let Some(Value::Object(e)) = h.get_mut("effect") {
        let mut efg = None;
        if let Some(Value::String(f)) = e.get_mut("foreground") {
            if let Some((p, a)) = f.split_once('/') {
                efg = Some(p.to_owned());
                if let Some(rest) = a.strip_prefix(p).filter(|r| r.starts_with('.')) {
                    *f = format!("{p}/{rest}");
                }
            }
        }
        if let Some(Value::Object(t)) = e.get_mut("tree") {
            t.retain(|k, v| !quiet(k, v));
            if let Some(Value::Array(ws)) = t.get_mut("windows") {
                for w in ws.iter_mut().filter_map(Value::as_object_mut) {
                    if efg.is_some() && w.get("package").and_then(Value::as_str) == efg.as_deref() {
                        w.remove("package");
                    }
                }
            }
        }
    }
    let screen = serde_json::json!([0, 0, h.get("screen_width"), h.get("screen_height")]);
    if let Some(Value::Array(ws)) = h.get_mut("tree").and_then(|t| t.get_mut("windows")) {
        for w in ws.iter_mut().filter_map(Value::as_object_mut) {
            if fg.is_some() && w.get("package").and_then(Value::as_str) == fg.as_deref() {
                w.remove("package");
            }
            if w.get("bounds") == Some(&screen) {
                w.remove("bounds");
            }
        }
    }
}

/// The value seen most often (the first of equals).
fn most_common<'a>(values: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for p in values {
        match counts.iter_mut().find(|(q, _)| *q == p) {
            Some((_, n)) => *n += 1,
            None => counts.push((p, 1)),
        }
    }
    // The first of equals: `max_by_key` keeps the last, so the list is walked backwards.
    counts.into_iter().rev().max_by_key(|(_, n)| *n).map(|(p, _)| p.to_owned())
}

/// One element: index, class, text, description, id (without `id_prefix`), bounds, then every other field.
fn line(e: &Map<String, Value>, package: &str, id_prefix: &str) -> String {
    let s = |k: &str| e.get(k).and_then(Value::as_str);
    let mut out = match e.get("index") {
        Some(i) => format!("#{i}"),
        None => "#?".to_owned(),
    };
    if let Some(c) = s("class") {
        out.push(' ');
        out.push_str(c);
    }
    if let Some(t) = e.get("text").filter(|t| t.is_string()) {
        out.push(' ');
        out.push_str(&t.to_string());
    }
    if let Some(d) = e.get("content_desc").filter(|d| d.is_string()) {
        out.push_str(&format!(" desc={d}"));
    }
    if let Some(id) = s("resource_id") {
        let short = id.strip_prefix(id_prefix).filter(|r| !r.is_empty());
        let id = short.unwrap_or(id);
        // Quoted only when it would not read as one word.
        if id.chars().all(|c| c.is_ascii_alphanumeric() || "_.:/-".contains(c)) {
            out.push_str(&format!(" id={id}"));
        } else {
            out.push_str(&format!(" id={}", Value::String(id.to_owned())));
        }
    }
    if let Some(Value::Array(b)) = e.get("bounds") {
        let b: Vec<String> = b.iter().map(Value::to_string).collect();
        out.push_str(&format!(" [{}]", b.join(",")));
    }
    const SHOWN: &[&str] = &["index", "class", "text", "content_desc", "resource_id", "bounds", "package"];
    for (k, v) in e {
        if SHOWN.contains(&k.as_str()) || (k == "center" && center_of(e) == Some(v.clone())) {
            continue;
        }
        match v {
            Value::Bool(true) => out.push_str(&format!(" {k}")),
            _ => out.push_str(&format!(" {k}={v}")),
        }
    }
    if let Some(p) = s("package").filter(|p| *p != package) {
        out.push_str(&format!(" pkg={p}"));
    }
    out
}

/// `center` as the tools compute it from `bounds` (`Element::center`): when equal, the line leaves it out.
fn center_of(e: &Map<String, Value>) -> Option<Value> {
    let b: Vec<i64> = e.get("bounds")?.as_array()?.iter().filter_map(Value::as_i64).collect();
    let [l, t, r, bo] = b[..] else { return None };
    Some(serde_json::json!([(l + r) / 2, (t + bo) / 2]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn elements_read_one_per_line_with_nothing_lost() {
        let r = json!({"observation_id": "obs_1", "count": 2, "truncated": false, "frame_blank": true, "elements": [
            {"index": 3, "class": "Button", "package": "com.x", "bounds": [0, 0, 10, 20], "center": [5, 10],
             "text": "Increment", "resource_id": "com.x:id/inc", "content_desc": "Inc \"it\"", "clickable": true,
             "marked": true},
            {"index": 4, "class": "View", "package": "com.y", "bounds": [0, 0, 11, 20], "center": [1, 1],
             "resource_id": "com.x:id/odd one", "enabled": false, "window": 1}
        ]});
        let t = render(&r);
        let lines: Vec<&str> = t.lines().collect();
        let head: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(
            (&head["package"], &head["observation_id"], &head["count"]),
            (&json!("com.x"), &json!("obs_1"), &json!(2))
        );
        // Everyday values are left out of the text (structuredContent keeps them); others stay.
        assert!(head.get("truncated").is_none() && head["frame_blank"] == true, "{head}");
        let el = json!([{"index": 1, "class": "View", "bounds": [0, 0, 1, 1], "text": "a"}]);
        let plain = json!({"screen_on": true, "locked": false, "keyboard_shown": false, "frame": "ok",
            "orientation": "portrait", "tree": {"source": "helper", "state": "ok",
            "windows": [{"focused": true, "type": "application"}]}, "elements": el});
        let head: Value = serde_json::from_str(render(&plain).lines().next().unwrap()).unwrap();
        for k in ["screen_on", "locked", "keyboard_shown", "frame", "orientation", "tree"] {
            assert!(head.get(k).is_none(), "{k} at its everyday value is not in the text: {head}");
        }
        // What an agent must act on stays: a lock screen, the keyboard, a dialog over the app, an empty tree.
        let unusual = json!({"screen_on": true, "locked": true, "keyboard_shown": true, "frame": "screen_off",
            "orientation": "landscape", "tree": {"state": "ok", "windows": [{"type": "application"},
            {"focused": true, "type": "dialog"}]}, "elements": el});
        let head: Value = serde_json::from_str(render(&unusual).lines().next().unwrap()).unwrap();
        for k in ["locked", "keyboard_shown", "frame", "orientation", "tree"] {
            assert!(head.get(k).is_some(), "{k} is said when it is not the everyday value: {head}");
        }
        let empty = json!({"tree": {"state": "empty", "windows": []}, "elements": el});
        let head: Value = serde_json::from_str(render(&empty).lines().next().unwrap()).unwrap();
        assert_eq!(head["tree"]["state"], "empty", "{head}");
        // Said once: the activity after its package, a full-screen window of the foreground app.
        let o = json!({"foreground_package": "com.x", "foreground_activity": "com.x.ui.Main", "screen_width": 10,
            "screen_height": 20, "tree": {"windows": [{"type": "application", "package": "com.x", "bounds": [0, 0, 10, 20]},
            {"type": "input_method", "package": "com.k", "bounds": [0, 10, 10, 20]}]}, "elements": [
            {"index": 1, "class": "View", "package": "com.x", "bounds": [0, 0, 1, 1], "text": "a"}]});
        let head: Value = serde_json::from_str(render(&o).lines().next().unwrap()).unwrap();
        assert_eq!(head["foreground_activity"], ".ui.Main");
        assert_eq!(
            head["tree"]["windows"],
            json!([{"type": "application"},
            {"type": "input_method", "package": "com.k", "bounds": [0, 10, 10, 20]}])
        );
        assert_eq!(lines[1], r#"#3 Button "Increment" desc="Inc \"it\"" id=inc [0,0,10,20] clickable marked"#);
        // Another package, an id not its own, a centre that is not the middle, flags that are not true: all kept.
        assert_eq!(lines[2], r#"#4 View id="odd one" [0,0,11,20] center=[1,1] enabled=false window=1 pkg=com.y"#);
        assert_eq!(lines.len(), 3);
        assert!(t.len() < r.to_string().len());
        // An action's effect: its tree delta's lists too, each under its path.
        let tap = json!({"x": 1, "effect": {"settled": true, "tree": {"observation_id": "obs_2", "appeared": [
            {"index": 9, "class": "TextView", "package": "com.x", "bounds": [0, 0, 2, 2], "center": [1, 1], "text": "Hi"}],
            "disappeared": [], "changed": [{"index": 2, "class": "TextView", "package": "com.x", "bounds": [0, 0, 2, 2],
            "text": "Count: 1", "was": {"text": "Count: 0"}}]}}});
        let t = render(&tap);
        let lines: Vec<&str> = t.lines().collect();
        let head: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(head["effect"]["tree"]["observation_id"], "obs_2");
        assert_eq!(head["effect"]["tree"]["disappeared"], json!([]));
        assert!(head["effect"]["tree"]["appeared"].as_str().unwrap().starts_with("one per line below"), "{head}");
        assert_eq!(head["effect"]["tree"]["changed"], "1 below, as elements");
        assert_eq!(
            &lines[1..],
            [
                "effect.tree.appeared:",
                r#"#9 TextView "Hi" [0,0,2,2]"#,
                "effect.tree.changed:",
                r#"#2 TextView "Count: 1" [0,0,2,2] was={"text":"Count: 0"}"#
            ]
        );
        // The soft keyboard's keys in an effect are counted, not listed; the foreground in its short form.
        let typed = json!({"effect": {"foreground": "com.x/com.x.Main", "tree": {"truncated": false, "windows": [
            {"type": "input_method", "package": "com.k"}, {"type": "application", "package": "com.x"}], "appeared": [
            {"index": 1, "class": "View", "package": "com.k", "bounds": [0, 0, 1, 1], "content_desc": "q", "window": 0},
            {"index": 2, "class": "View", "package": "com.k", "bounds": [1, 0, 2, 1], "content_desc": "w", "window": 0}],
            "changed": [{"index": 9, "class": "EditText", "package": "com.x", "bounds": [0, 0, 2, 2], "text": "hi",
            "window": 1}]}}});
        let t = render(&typed);
        let lines: Vec<&str> = t.lines().collect();
        let head: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(head["effect"]["tree"]["appeared"], "2 keyboard keys, not listed (android_ui_dump lists them)");
        assert_eq!(head["effect"]["foreground"], "com.x/.Main");
        assert_eq!(
            head["effect"]["tree"]["windows"],
            json!([{"type": "input_method", "package": "com.k"},
            {"type": "application"}])
        );
        assert!(head["effect"]["tree"].get("truncated").is_none(), "{head}");
        assert_eq!(&lines[1..], ["effect.tree.changed:", r#"#9 EditText "hi" [0,0,2,2] window=1"#]);
        // No list: the JSON as it is.
        let plain = json!({"x": 1, "elements": "n/a"});
        assert_eq!(render(&plain), plain.to_string());
    }
}
