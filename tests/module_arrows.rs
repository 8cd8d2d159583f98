//! The arrows between the crate's top-level modules (ARCHITECTURE.md, "Arrows"): every `crate::X` path in a
//! module's non-test code is an arrow to `X`; the arrows must form no cycle (so no two modules import each other),
//! and only `main.rs` and `ops/` may reach the command line (`cli`). Reads the sources only; no build of the crate's
//! internals is involved, so a new import that closes a circle fails here with the path of every arrow on it.
//!
//! A reader can check the same by hand: `grep -rn 'crate::cli' src` names only `ops/`, and
//! `grep -rln 'crate::wall' src/server` prints nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Source text with comments, string and char literals blanked out, so a path named in a doc comment or a message
/// is no arrow.
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == b'/' && next == Some(b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == b'/' && next == Some(b'*') {
            let mut depth = 0usize;
            loop {
                if i + 1 >= b.len() {
                    i = b.len();
                    break;
                }
                if b[i] == b'/' && b[i + 1] == b'*' {
                    depth += 1;
                    i += 2;
                } else if b[i] == b'*' && b[i + 1] == b'/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == b'r' && (next == Some(b'"') || next == Some(b'#')) && !ident_before(b, i) {
            // Raw string r"…", r#"…"#: ends at a quote followed by as many hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&b'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&b'"') {
                out.push(c as char);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == b'"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&b'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push_str("\"\"");
        } else if c == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == b'\'' {
            // A char literal ('x', '\n', '\u{..}') or a lifetime ('a): a lifetime has no closing quote right after.
            if next == Some(b'\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else if b.get(i + 2) == Some(&b'\'') {
                i += 3;
                out.push_str("' '");
            } else if next.is_some_and(|n| n >= 0x80) {
                // A multi-byte char literal.
                let mut j = i + 1;
                while j < b.len() && b[j] != b'\'' {
                    j += 1;
                }
                i = j + 1;
                out.push_str("' '");
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            // Copy one UTF-8 character.
            let len = match c {
                0x00..=0x7f => 1,
                0xc0..=0xdf => 2,
                0xe0..=0xef => 3,
                _ => 4,
            };
            out.push_str(std::str::from_utf8(&b[i..(i + len).min(b.len())]).unwrap_or(" "));
            i += len;
        }
    }
    out
}

fn ident_before(b: &[u8], i: usize) -> bool {
    i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')
}

/// Drops `#[cfg(test)]` items (unit-test modules may reach anywhere; they are not part of the shipped arrows).
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        // The item ends at `;` (a `mod x;` declaration) or at the brace closing its first `{`.
        let semi = after.find(';');
        let open = after.find('{');
        match (semi, open) {
            (Some(s), o) if o.is_none_or(|o| s < o) => rest = &after[s + 1..],
            (_, Some(o)) => {
                let mut depth = 0usize;
                let mut end = after.len();
                for (k, ch) in after[o..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = o + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                rest = &after[end..];
            }
            _ => rest = "",
        }
    }
    out.push_str(rest);
    out
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for e in entries {
            rust_files(&e, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_owned());
    }
}

/// Top-level module → (module it names → files naming it).
type Arrows = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

fn arrows() -> Arrows {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = BTreeSet::new();
    for e in std::fs::read_dir(&src).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        if (p.is_dir() || p.extension().is_some_and(|e| e == "rs")) && name != "lib" {
            modules.insert(name);
        }
    }
    let mut arrows = Arrows::new();
    for m in &modules {
        let mut files = Vec::new();
        let dir = src.join(m);
        let root = if dir.is_dir() { dir } else { src.join(format!("{m}.rs")) };
        rust_files(&root, &mut files);
        for f in files {
            // A file of unit tests only (`#[cfg(test)] mod tests;` next to it).
            if f.file_name().is_some_and(|n| n == "tests.rs" || n == "wire_tests.rs") {
                continue;
            }
            let code = without_tests(&code_only(&std::fs::read_to_string(&f).unwrap()));
            // The binary names the library by its crate name, the library itself as `crate`.
            for prefix in ["crate::", "xagent_adb_connector::"] {
                for (at, _) in code.match_indices(prefix) {
                    if ident_before(code.as_bytes(), at) {
                        continue;
                    }
                    let target: String = code[at + prefix.len()..]
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if &target != m && modules.contains(&target) {
                        let shown = f.strip_prefix(src.parent().unwrap()).unwrap().display().to_string();
                        arrows.entry(m.clone()).or_default().entry(target).or_default().insert(shown);
                    }
                }
            }
        }
    }
    arrows
}

/// A cycle through the arrows, if any (depth-first search with the path on a stack).
fn cycle(arrows: &Arrows) -> Option<Vec<String>> {
    fn visit(m: &str, arrows: &Arrows, done: &mut BTreeSet<String>, path: &mut Vec<String>) -> Option<Vec<String>> {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut c = path[at..].to_vec();
            c.push(m.to_owned());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_owned());
        for next in arrows.get(m).into_iter().flat_map(|t| t.keys()) {
            if let Some(c) = visit(next, arrows, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    arrows.keys().find_map(|m| visit(m, arrows, &mut done, &mut Vec::new()))
}

fn describe(arrows: &Arrows) -> String {
    let mut s = String::new();
    for (from, to) in arrows {
        s.push_str(&format!("{from} → {}\n", to.keys().cloned().collect::<Vec<_>>().join(", ")));
    }
    s
}

#[test]
fn top_level_modules_form_no_cycle() {
    let arrows = arrows();
    // `cargo test --test module_arrows -- --nocapture` prints the map (ARCHITECTURE.md, "Arrows").
    println!("{}", describe(&arrows));
    assert!(arrows.len() > 10, "the scan found too few modules to mean anything:\n{}", describe(&arrows));
    if let Some(c) = cycle(&arrows) {
        let mut why = String::new();
        for pair in c.windows(2) {
            let files = &arrows[&pair[0]][&pair[1]];
            why.push_str(&format!(
                "  {} → {} (in {})\n",
                pair[0],
                pair[1],
                files.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
        panic!("import cycle {}:\n{why}\nall arrows:\n{}", c.join(" → "), describe(&arrows));
    }
}

#[test]
fn only_main_and_the_operator_commands_reach_the_command_line() {
    let arrows = arrows();
    let reaching: Vec<_> = arrows
        .iter()
        .filter_map(|(from, to)| to.get("cli").map(|files| (from.clone(), files.clone())))
        .filter(|(from, _)| from != "main" && from != "ops")
        .collect();
    assert!(reaching.is_empty(), "below main and ops/, nothing imports cli: {reaching:?}");
}

#[test]
fn the_scan_sees_through_comments_and_strings() {
    let code = code_only("use crate::a; // crate::b\n/* crate::c /* nested */ crate::d */ let s = \"crate::e\"; let r = r#\"crate::f\"#; let c = '\"'; crate::g");
    assert!(code.contains("crate::a") && code.contains("crate::g"), "{code}");
    for hidden in ["crate::b", "crate::c", "crate::d", "crate::e", "crate::f"] {
        assert!(!code.contains(hidden), "{hidden} in {code}");
    }
    let code = without_tests("use crate::a;\n#[cfg(test)]\nmod tests { fn f() { crate::b::x(); { } } }\ncrate::c");
    assert!(code.contains("crate::a") && code.contains("crate::c") && !code.contains("crate::b"), "{code}");
}

/// One room's inside: file (path under `src/<room>/` without `.rs`, `mod` for the room's own `mod.rs`) → (file it
/// names → the paths naming it, as written).
type Inner = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The files of a room a module path names: the deepest `a/b.rs` or `a/b/mod.rs` the segments reach, else the
/// module file the path stops in (an item of it).
fn resolve(room: &Path, segs: &[String]) -> Option<String> {
    for k in (1..=segs.len()).rev() {
        let rel = segs[..k].join("/");
        if room.join(format!("{rel}.rs")).is_file() {
            return Some(rel);
        }
        if room.join(&rel).join("mod.rs").is_file() {
            return Some(format!("{rel}/mod"));
        }
    }
    None
}

/// The first identifier of each top-level member of the `{…}` group at the start of `s` (`{a, b::c, d as e}`
/// → a, b, d).
fn group_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut expect = true;
    let mut cur = String::new();
    for ch in s.chars() {
        match ch {
            '{' => {
                depth += 1;
                if depth == 1 {
                    expect = true;
                    continue;
                }
            }
            '}' => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            ',' if depth == 1 => {
                if !cur.is_empty() {
                    heads.push(std::mem::take(&mut cur));
                }
                expect = true;
                continue;
            }
            _ => {}
        }
        if depth == 1 && expect {
            if ch.is_ascii_alphanumeric() || ch == '_' {
                cur.push(ch);
            } else if !cur.is_empty() {
                heads.push(std::mem::take(&mut cur));
                expect = false;
            }
            // Whitespace before a member's first identifier: keep expecting it.
        }
    }
    if !cur.is_empty() {
        heads.push(cur);
    }
    heads
}

/// The module path after a prefix: `a::b::c` (the last segment may be an item), or each head of a `{…}` group.
fn paths_after(code: &str) -> Vec<Vec<String>> {
    let mut segs = Vec::new();
    let mut rest = code;
    loop {
        if rest.starts_with('{') {
            return group_heads(rest).into_iter().map(|h| [segs.clone(), vec![h]].concat()).collect();
        }
        let ident: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if ident.is_empty() {
            break;
        }
        rest = &rest[ident.len()..];
        segs.push(ident);
        match rest.strip_prefix("::") {
            Some(r) => rest = r,
            None => break,
        }
    }
    vec![segs]
}

fn inner_arrows(room_name: &str) -> Inner {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let room = src.join(room_name);
    let mut files = Vec::new();
    rust_files(&room, &mut files);
    let mut inner = Inner::new();
    for f in files {
        if f.file_name().is_some_and(|n| n == "tests.rs" || n == "wire_tests.rs") {
            continue;
        }
        let rel = f.strip_prefix(&room).unwrap().with_extension("").to_string_lossy().replace('\\', "/");
        // The module this file is: `a/b.rs` and `a/b/mod.rs` are both `a::b`.
        let mut module: Vec<String> = rel.split('/').map(str::to_owned).collect();
        if module.last().is_some_and(|m| m == "mod") {
            module.pop();
        }
        let code = without_tests(&code_only(&std::fs::read_to_string(&f).unwrap()));
        // Its child modules, named bare (`screen::tools(…)` in a `mod.rs`).
        let children: BTreeSet<String> = code
            .match_indices("mod ")
            .filter(|(at, _)| !ident_before(code.as_bytes(), *at))
            .filter_map(|(at, _)| {
                let name: String =
                    code[at + 4..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                code[at + 4 + name.len()..].trim_start().starts_with(';').then_some(name)
            })
            .collect();
        let mut named: Vec<(Vec<String>, String)> = Vec::new();
        let crate_prefix = format!("crate::{room_name}::");
        for (at, _) in code.match_indices(&crate_prefix) {
            if !ident_before(code.as_bytes(), at) {
                for p in paths_after(&code[at + crate_prefix.len()..]) {
                    named.push((p, code[at..].chars().take(60).collect()));
                }
            }
        }
        for (at, _) in code.match_indices("super::") {
            if ident_before(code.as_bytes(), at) || at >= 2 && &code[at - 2..at] == "::" {
                continue;
            }
            // `super::super::x` climbs twice.
            let mut up = 1;
            let mut from = at + "super::".len();
            while code[from..].starts_with("super::") {
                up += 1;
                from += "super::".len();
            }
            if up > module.len() {
                continue; // leaves the room: a top-level arrow, checked above
            }
            let base = module[..module.len() - up].to_vec();
            for p in paths_after(&code[from..]) {
                named.push(([base.clone(), p].concat(), code[at..].chars().take(60).collect()));
            }
        }
        for child in &children {
            for (at, _) in code.match_indices(&format!("{child}::")) {
                if ident_before(code.as_bytes(), at) || at >= 2 && &code[at - 2..at] == "::" {
                    continue;
                }
                let mut p = module.clone();
                p.extend(paths_after(&code[at..]).remove(0));
                named.push((p, code[at..].chars().take(60).collect()));
            }
        }
        for (path, shown) in named {
            let target = resolve(&room, &path).unwrap_or_else(|| "mod".into());
            if target != rel {
                let shown = shown.split(['\n', ';', '(']).next().unwrap_or("").to_owned();
                inner.entry(rel.clone()).or_default().entry(target).or_default().insert(shown);
            }
        }
    }
    inner
}

fn rooms() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut rooms: Vec<String> = std::fs::read_dir(&src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    rooms.sort();
    rooms
}

fn inner_cycle_report(room: &str, inner: &Inner, c: &[String]) -> String {
    let mut why = String::new();
    for pair in c.windows(2) {
        let at = &inner[&pair[0]][&pair[1]];
        why.push_str(&format!(
            "  {room}/{}.rs → {room}/{}.rs ({})\n",
            pair[0],
            pair[1],
            at.iter().cloned().collect::<Vec<_>>().join(" | ")
        ));
    }
    why
}

#[test]
fn the_files_inside_each_room_form_no_cycle() {
    let mut failures = String::new();
    for room in rooms() {
        let inner = inner_arrows(&room);
        println!("{room}/:\n{}", describe(&inner));
        if let Some(c) = cycle(&inner) {
            failures.push_str(&format!(
                "import cycle inside {room}/: {}\n{}",
                c.join(" → "),
                inner_cycle_report(&room, &inner, &c)
            ));
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn the_inner_scan_reads_groups_supers_and_children() {
    assert_eq!(group_heads("{a, b::c, d as e, f::{g, h}}"), ["a", "b", "d", "f"]);
    assert_eq!(paths_after("x::y::Z;"), [vec!["x", "y", "Z"]]);
    assert_eq!(paths_after("x::{Y, z::W}"), [vec!["x", "Y"], vec!["x", "z"]]);
    // The pixel room's own arrows, as they are known to run.
    let pixels = inner_arrows("pixels");
    assert!(pixels["capture"].contains_key("parallel") && pixels["frame"].contains_key("downscale"), "{pixels:?}");
    assert!(!pixels.values().any(|t| t.contains_key("mod")), "nothing in pixels/ imports its mod.rs: {pixels:?}");
}

/// The files of `tools/` that define a tool: their shipped code builds a `ToolSpec { … }` literal (every tool has one, the
/// closure-backed ones and those with an `impl Tool` of their own alike). `impl Tool for` alone is no sign:
/// `device.rs`'s `DeviceTool` is the adapter every closure tool runs in, with no tool of its own.
fn tool_files() -> BTreeSet<String> {
    let room = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/tools");
    let mut files = Vec::new();
    rust_files(&room, &mut files);
    files
        .into_iter()
        .filter(|f| {
            let code = without_tests(&code_only(&std::fs::read_to_string(f).unwrap()));
            code.match_indices("ToolSpec").any(|(at, _)| {
                !ident_before(code.as_bytes(), at)
                    && code[at + "ToolSpec".len()..].trim_start().starts_with('{')
                    // Not the type's declaration, an `impl`, or a return type before a body (`-> &ToolSpec {`).
                    && !["struct", "impl", "for", "&", "->"].iter().any(|w| code[..at].trim_end().ends_with(w))
            })
        })
        .map(|f| f.strip_prefix(&room).unwrap().with_extension("").to_string_lossy().replace('\\', "/"))
        .collect()
}

/// Inside `tools/`, one way: a tool file holds its tools and nothing another tool needs. What two tools share (the
/// element model, the observation store, the screen-state gate, an action's result parts) sits in a tool-free file
/// below them, the registry and the tool context at the bottom; nothing imports `tools/mod.rs` (it only lists the
/// default tools and re-exports).
#[test]
fn a_tool_file_imports_no_other_tool_file() {
    let tools = tool_files();
    assert!(tools.len() > 10 && tools.contains("input") && !tools.contains("device"), "tool files: {tools:?}");
    let inner = inner_arrows("tools");
    let mut failures = String::new();
    for (from, to) in &inner {
        for (target, at) in to {
            if target == "mod" {
                failures.push_str(&format!(
                    "tools/{from}.rs imports tools/mod.rs ({}): name the file that defines it instead\n",
                    at.iter().cloned().collect::<Vec<_>>().join(" | ")
                ));
            } else if tools.contains(from) && tools.contains(target) {
                failures.push_str(&format!(
                    "tools/{from}.rs defines a tool and imports tools/{target}.rs, which defines one too ({}): move \
                     what they share into a tool-free file of tools/\n",
                    at.iter().cloned().collect::<Vec<_>>().join(" | ")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures}");
}

/// No source file over 1,000 lines (ARCHITECTURE.md, "Where new work goes": split a file by concern before it grows
/// past that; issue 51). Unit-test files count too.
#[test]
fn no_source_file_is_over_a_thousand_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    assert!(files.len() > 50, "the scan sees the sources: {}", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n > 1000).then(|| format!("{} ({n} lines)", f.strip_prefix(&src).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "source files over 1,000 lines (split them by concern): {long:?}");
}
