//! "Did you mean": the few known names nearest to a mistyped one, for errors that would otherwise list every
//! name (a tool id, a key name). Three names cost a few bytes of an agent's context; the whole list of 28 keys
//! cost ~470 and hid the one it meant.

/// Names an answer suggests at most.
pub const SUGGESTED: usize = 3;

/// The (at most [`SUGGESTED`]) names of `known` nearest to `given`, best first; compared ignoring ASCII case, a
/// name containing `given` (or contained in it) counting as near.
pub fn nearest<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let g = given.to_ascii_lowercase();
    // Names containing what was typed (or contained in it) first: `volume` means the VOLUME_ keys, not HOME.
    let mut scored: Vec<(bool, usize, &str)> = known
        .into_iter()
        .map(|k| {
            let l = k.to_ascii_lowercase();
            let contains = !g.is_empty() && (l.contains(&g) || g.contains(&l));
            (!contains, distance(&g, &l), k)
        })
        .collect();
    scored.sort();
    scored.into_iter().take(SUGGESTED).map(|(_, _, k)| k).collect()
}

/// `did you mean "A", "B" or "C"?`, or an empty string when nothing is known.
pub fn did_you_mean<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let near: Vec<String> = nearest(given, known).into_iter().map(|k| format!("{k:?}")).collect();
    match near.as_slice() {
        [] => String::new(),
        [one] => format!("did you mean {one}?"),
        [rest @ .., last] => format!("did you mean {} or {last}?", rest.join(", ")),
    }
}

/// When no element matches `until` (a selector's JSON) but the screen has a list that scrolls: the sentence that
/// says the target may be off-screen and the call that finds it (issue 49 item 4), towards the edge where a row is
/// cut (`tools::tree::scrollables`; down when neither says). Empty when nothing on screen scrolls.
pub fn off_screen(until: &serde_json::Value, now: &[super::element::Element]) -> String {
    if !now.iter().any(|e| e.scrollable && e.enabled) {
        return String::new();
    }
    let hints = super::tree::scrollables(now);
    let more = |k: &str| hints.iter().any(|h| h[k] == true);
    let direction = if !more("more_below") && more("more_above") { "up" } else { "down" };
    let call = serde_json::json!({"direction": direction, "until": until});
    format!("; it may be off-screen, in a list that scrolls: android_scroll {call} finds it")
}

/// Levenshtein distance over chars (the first 100 of each), a containment counted as the length difference.
pub fn distance(a: &str, b: &str) -> usize {
    if !a.is_empty() && !b.is_empty() && (b.contains(a) || a.contains(b)) {
        return a.chars().count().abs_diff(b.chars().count());
    }
    let a: Vec<char> = a.chars().take(100).collect();
    let b: Vec<char> = b.chars().take(100).collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_nearest_names_best_first() {
        let keys = ["HOME", "BACK", "ENTER", "DEL", "FORWARD_DEL", "VOLUME_UP", "VOLUME_DOWN", "VOLUME_MUTE"];
        assert_eq!(nearest("hom", keys)[0], "HOME");
        assert_eq!(nearest("VOLUME", keys), ["VOLUME_UP", "VOLUME_DOWN", "VOLUME_MUTE"]);
        assert_eq!(did_you_mean("bakc", ["BACK"]), "did you mean \"BACK\"?");
        assert_eq!(did_you_mean("x", ["a", "b"]), "did you mean \"a\" or \"b\"?");
        assert_eq!(did_you_mean("x", []), "");
        assert_eq!(nearest("android_tpa", ["android_tap", "android_key", "android_observe"])[0], "android_tap");
    }
}
