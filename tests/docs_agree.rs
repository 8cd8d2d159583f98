//! Facts the documents state about the product, checked against the product: each test fails when one of them
//! changes without the other.

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_xagent-adb-connector");

fn read(rel: &str) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `device-profile/examples/README.md` says how many default tools the recorded session's card lists.
#[test]
fn examples_readme_counts_the_default_tools_of_the_card() {
    let out = Command::new(BIN).arg("card").env_remove("XAGENT_ADB_POLICY").output().unwrap();
    assert!(out.status.success());
    let card: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools = card["tools"].as_array().unwrap().len();
    let doc = read("device-profile/examples/README.md").split_whitespace().collect::<Vec<_>>().join(" ");
    let said: usize = doc
        .split_once("every descriptor list the ")
        .and_then(|(_, rest)| rest.split_once(" default tools"))
        .and_then(|(n, _)| n.parse().ok())
        .expect("the examples README states the number of default tools");
    assert_eq!(said, tools, "device-profile/examples/README.md says {said} default tools; the card has {tools}");
}

/// `install.sh --help` prints its usage comment, and only that (it used to end with `set -euo pipefail`).
#[test]
fn install_sh_help_is_the_usage_only() {
    let out = Command::new("bash").arg(read_path("systemd/install.sh")).arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with("Installs xagent-adb-connector as a systemd service"), "{text}");
    assert!(text.contains("--uninstall") && text.contains("Idempotent"), "{text}");
    for line in text.lines() {
        assert!(!line.starts_with('#') && !line.contains("set -e") && !line.contains("NAME="), "stray line {line:?}");
    }
}

fn read_path(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// The release workflow builds what README's install section promises, and README points at it.
#[test]
fn release_workflow_builds_the_tarballs_the_readme_installs() {
    let wf = read(".github/workflows/release.yml");
    assert!(wf.contains("tags: [\"v*\"]"), "runs on version tags");
    assert!(wf.contains("does not match the Cargo.toml version"), "checks the tag against Cargo.toml");
    let build = wf.lines().find(|l| l.contains("cross/build.sh ")).expect("runs cross/build.sh");
    for t in ["aarch64-unknown-linux-musl", "armv7-unknown-linux-musleabihf", "x86_64-unknown-linux-musl"] {
        assert!(wf.contains(t), "the workflow builds {t}: {build}");
        assert!(read("README.md").contains(t), "README names {t}");
    }
    assert!(wf.contains("dist/*.tar.gz dist/SHA256SUMS"), "attaches the tarballs and SHA256SUMS");
    let readme = read("README.md");
    let install = readme.split("## Install on a Raspberry Pi").nth(1).unwrap().split("\n## ").next().unwrap();
    assert!(install.contains(".github/workflows/release.yml") && install.contains("/releases"), "{install}");
    assert!(install.contains("sha256sum --ignore-missing -c SHA256SUMS"), "{install}");
}

// ---- Issue 37 item 2: a README that is a path, and a reference beside it in docs/ ----

/// The Markdown files a reader meets, relative to the checkout.
fn markdown_files() -> Vec<String> {
    let mut files = vec![
        "README.md".to_string(),
        "ARCHITECTURE.md".to_string(),
        "BENCHMARKS.md".to_string(),
        "skills/connector-device-adb/SKILL.md".to_string(),
        "systemd/README.md".to_string(),
    ];
    for dir in ["docs", "device-profile"] {
        let mut names: Vec<String> = std::fs::read_dir(read_path(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".md"))
            .map(|n| format!("{dir}/{n}"))
            .collect();
        names.sort();
        files.extend(names);
    }
    files
}

/// The lines of `text` outside fenced code blocks, with their 1-based numbers.
fn prose_lines(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// The cells of a table row: split at `|` not escaped as `\|` (GitHub splits inside code spans too, which is why
/// the docs escape a pipe there).
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().strip_prefix('|').unwrap_or(row).trim_end();
    let inner = inner.strip_suffix('|').filter(|s| !s.ends_with('\\')).unwrap_or(inner);
    let mut cells = vec![String::new()];
    let mut prev = ' ';
    for c in inner.chars() {
        if c == '|' && prev != '\\' {
            cells.push(String::new());
        } else {
            cells.last_mut().unwrap().push(c);
        }
        prev = c;
    }
    cells.into_iter().map(|c| c.trim().to_string()).collect()
}

/// Every table renders as one: a run of `|` lines is a header, a delimiter row (`---`, `:--:`) and rows of the
/// header's width. The README once had a blank line inside its configuration table, so 11 rows rendered as a
/// paragraph of pipes; a row with one cell too many silently loses its last cell.
#[test]
fn every_markdown_table_has_a_header_a_delimiter_and_rows_of_its_width() {
    let mut problems = Vec::new();
    for file in markdown_files() {
        let text = read(&file);
        let lines = prose_lines(&text);
        let mut i = 0;
        while i < lines.len() {
            if !lines[i].1.trim_start().starts_with('|') {
                i += 1;
                continue;
            }
            let start = i;
            while i < lines.len() && lines[i].1.trim_start().starts_with('|') {
                i += 1;
            }
            let block = &lines[start..i];
            let (first_no, header) = block[0];
            let width = cells(header).len();
            let delimiter = block.get(1).map(|(_, l)| cells(l));
            let is_delimiter = |c: &Vec<String>| {
                c.iter().all(|cell| {
                    let d = cell.trim_matches(':');
                    !d.is_empty() && d.chars().all(|ch| ch == '-')
                })
            };
            match delimiter {
                Some(d) if is_delimiter(&d) => {
                    if d.len() != width {
                        problems.push(format!(
                            "{file}:{}: delimiter has {} cells, header {width}",
                            block[1].0,
                            d.len()
                        ));
                    }
                }
                _ => {
                    problems.push(format!("{file}:{first_no}: a table without its delimiter row (a blank line inside a table, or a stray `|` line): {header:.80}"));
                    continue;
                }
            }
            for (no, row) in &block[2..] {
                let n = cells(row).len();
                if n != width {
                    problems.push(format!("{file}:{no}: {n} cells in a table of {width}: {row:.80}"));
                }
            }
        }
    }
    assert!(problems.is_empty(), "tables that do not render:\n{}", problems.join("\n"));
}

/// GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> Vec<String> {
    prose_lines(text).iter().filter_map(|(_, l)| l.strip_prefix('#').map(|h| slug(h.trim_start_matches('#')))).collect()
}

/// Every relative link in the docs reaches a file of the checkout, and a `#fragment` a heading of it: the docs
/// moved out of the README, and links are what breaks when text moves.
#[test]
fn every_relative_link_in_the_docs_resolves() {
    let mut broken = Vec::new();
    for file in markdown_files() {
        let text = read(&file);
        let base = Path::new(&file).parent().unwrap().to_path_buf();
        for (no, line) in prose_lines(&text) {
            let mut rest = line;
            while let Some(at) = rest.find("](") {
                let tail = &rest[at + 2..];
                let Some(end) = tail.find(')') else { break };
                let target = &tail[..end];
                rest = &tail[end..];
                if target.contains("://") || target.starts_with("mailto:") || target.contains(' ') {
                    continue;
                }
                let (path, fragment) = target.split_once('#').unwrap_or((target, ""));
                let resolved = if path.is_empty() { Path::new(&file).to_path_buf() } else { base.join(path) };
                let full = read_path(resolved.to_str().unwrap());
                if !full.exists() {
                    broken.push(format!("{file}:{no}: {target} (no such file)"));
                    continue;
                }
                if !fragment.is_empty() && full.is_file() {
                    let doc = std::fs::read_to_string(&full).unwrap();
                    if !anchors(&doc).iter().any(|a| a == fragment) {
                        broken.push(format!("{file}:{no}: {target} (no such heading)"));
                    }
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The README is the newcomer's path — what it is (xAgent, the protocol, the skill), try it, test it, install it,
/// read more — short enough to read at once; the reference lives in docs/, every page of which it links.
#[test]
fn the_readme_is_a_short_path_that_links_every_docs_page() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 140, "README.md has {lines} lines; the reference belongs in docs/");
    let headings: Vec<&str> = readme.lines().filter_map(|l| l.strip_prefix("## ")).collect();
    assert_eq!(
        headings,
        ["Try it", "Test it", "Install on a Raspberry Pi", "What it does to your phones", "Read more"],
        "README's path"
    );
    let intro = readme.split("\n## ").next().unwrap();
    for must in ["xAgent", "Connector Common Protocol 3.0", "device-profile/", "SKILL.md", "/mcp"] {
        assert!(intro.contains(must), "README's introduction explains {must}");
    }
    let try_it = readme.split("## Try it").nth(1).unwrap().split("\n## ").next().unwrap();
    assert!(try_it.contains("The first run compiles"), "Try it says the first build takes a while");
    let more = readme.split("## Read more").nth(1).unwrap();
    for e in std::fs::read_dir(read_path("docs")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".md") {
            assert!(more.contains(&format!("](docs/{name})")), "README's Read more links docs/{name}");
        }
    }
}

/// `serve --help` parsed into its groups: heading → [(flag, env var)].
fn serve_help_groups() -> Vec<(String, Vec<(String, String)>)> {
    let out = Command::new(BIN).args(["serve", "--help"]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut groups: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for line in text.lines() {
        if !line.starts_with(' ') && line.ends_with(':') && !line.contains(" [") {
            let name = line.trim_end_matches(':');
            groups.push((if name == "Options" { "General".into() } else { name.to_string() }, Vec::new()));
            continue;
        }
        let t = line.trim_start();
        if line.starts_with("  ") && (t.starts_with("--") || t.starts_with('-')) && line.len() - t.len() <= 6 {
            let flag = t.split([' ', ',']).find(|w| w.starts_with("--")).unwrap_or("").to_string();
            if !flag.is_empty() && flag != "--help" {
                groups.last_mut().unwrap().1.push((flag, String::new()));
            }
        } else if let Some(env) = t.strip_prefix("[env: ") {
            let env = env.split('=').next().unwrap().to_string();
            if let Some((_, flags)) = groups.last_mut() {
                if let Some(last) = flags.last_mut() {
                    last.1 = env;
                }
            }
        }
    }
    groups.retain(|(_, flags)| !flags.is_empty());
    groups
}

/// docs/configuration.md has one table per `serve --help` group, naming the same flags with the same environment
/// variables, in the same groups: a flag added to the binary (or moved, or renamed) without its row fails here.
#[test]
fn the_configuration_page_and_serve_help_name_the_same_flags_in_the_same_groups() {
    let doc = read("docs/configuration.md");
    let mut doc_groups: Vec<(String, Vec<(String, String)>)> = Vec::new();
    for (_, line) in prose_lines(&doc) {
        if let Some(h) = line.strip_prefix("## ") {
            doc_groups.push((h.to_string(), Vec::new()));
        } else if line.starts_with("| `--") {
            let c = cells(line);
            let first_word = |cell: &str| cell.split(' ').next().unwrap().trim_matches('`').to_string();
            let (flag, env) = (first_word(&c[0]), first_word(&c[1]));
            doc_groups.last_mut().expect("a flag row under a heading").1.push((flag, env));
        }
    }
    doc_groups.retain(|(_, flags)| !flags.is_empty());
    let help = serve_help_groups();
    assert!(help.len() >= 5, "serve --help has its groups: {help:?}");
    assert_eq!(doc_groups, help, "docs/configuration.md (left) and `serve --help` (right) differ");
}

/// docs/commands.md names every command `--help` lists.
#[test]
fn the_commands_page_names_every_command() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let commands: Vec<&str> = text
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .map(|l| l.split_whitespace().next().unwrap())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 8, "{commands:?}");
    let doc = read("docs/commands.md");
    for c in commands {
        assert!(doc.contains(&format!("| `{c}")), "docs/commands.md has no row for `{c}`");
    }
}

/// The docs name only tools the binary has (the README once told users of an `android_ui_find` that did not
/// exist): every `android_…` word in the README and docs/ is a tool of the card with every risky tool enabled, or
/// a field name listed here.
#[test]
fn the_docs_name_only_tools_that_exist() {
    let dir = std::env::temp_dir().join(format!("xagent-docs-agree-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("policy.json");
    std::fs::write(
        &policy,
        r#"{"enabled_risky_tools": ["android_app_uninstall", "android_app_clear_data", "android_shell"],
            "shell_allow_prefixes": ["getprop "]}"#,
    )
    .unwrap();
    let out = Command::new(BIN).args(["card", "--policy"]).arg(&policy).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let card: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let tools: Vec<String> =
        card["tools"].as_array().unwrap().iter().map(|t| t["tool_id"].as_str().unwrap().to_string()).collect();
    // Words of the form android_x that are not tool ids: fields of results and the devices API.
    const FIELDS: &[&str] = &["android_version", "android_release"];
    let mut unknown = Vec::new();
    let mut files = vec!["README.md".to_string()];
    files.extend(markdown_files().into_iter().filter(|f| f.starts_with("docs/")));
    for file in files {
        let text = read(&file);
        for (at, _) in text.match_indices("android_") {
            if at > 0 && text.as_bytes()[at - 1].is_ascii_alphanumeric() {
                continue;
            }
            let word: String =
                text[at..].chars().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_').collect();
            let word = word.trim_end_matches('_').to_string();
            if !tools.contains(&word) && !FIELDS.contains(&word.as_str()) {
                unknown.push(format!("{file}: {word}"));
            }
        }
    }
    assert!(!tools.is_empty());
    assert!(unknown.is_empty(), "the docs name tools the card does not have:\n{}", unknown.join("\n"));
}

/// The example policy in docs/policy.md is one the binary accepts (its keys are the real ones: unknown keys make
/// the connector refuse to start), so an operator can start from it.
#[test]
fn the_policy_pages_example_is_a_policy_the_binary_accepts() {
    let doc = read("docs/policy.md");
    let example = doc.split("```json\n").nth(1).and_then(|s| s.split("\n```").next()).expect("an example policy");
    let dir = std::env::temp_dir().join(format!("xagent-docs-policy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let policy = dir.join("policy.json");
    std::fs::write(&policy, example).unwrap();
    let out = Command::new(BIN).args(["card", "--policy"]).arg(&policy).output().unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert!(out.status.success(), "docs/policy.md's example is refused: {}", String::from_utf8_lossy(&out.stderr));
}

// ---- Issue 51 item 2: the device profile by concern ----

/// The device profile's pages besides the index, sorted.
fn profile_pages() -> Vec<String> {
    markdown_files()
        .into_iter()
        .filter(|f| f.starts_with("device-profile/") && f != "device-profile/README.md")
        .collect()
}

/// ARCHITECTURE.md stays a map (the brief: "short and current", rust-analyzer's as the model): at most 220 lines,
/// the detail in each module's `//!` comment, and its code map names every entry of `src/` (a module nobody can find
/// on the map is a module nobody maintains with the others in mind).
#[test]
fn the_architecture_map_is_short_and_names_every_module() {
    let text = read("ARCHITECTURE.md");
    let lines = text.lines().count();
    assert!(lines <= 220, "ARCHITECTURE.md has {lines} lines; the detail belongs in the modules' //! comments");
    let map = text.split("## Code map").nth(1).expect("a Code map section").split("\n## ").next().unwrap();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(read_path("src")).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let shown = if entry.file_type().unwrap().is_dir() { format!("`{name}/`") } else { format!("`{name}`") };
        if !map.contains(&shown) {
            missing.push(shown);
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "ARCHITECTURE.md's code map does not name {missing:?}");
}

/// `device-profile/README.md` is an index a reader can hold in mind: at most 200 lines, its "Pages" table links
/// every page of the folder (a page nobody links is a page nobody reads), and every page split out of it links back
/// (phone-helper.md, the helper's own wire protocol, predates the split).
#[test]
fn the_device_profile_readme_is_a_short_index_of_every_page() {
    let index = read("device-profile/README.md");
    let lines = index.lines().count();
    assert!(lines <= 200, "device-profile/README.md has {lines} lines; the detail belongs in its pages");
    let pages = index.split("\n## Pages\n").nth(1).expect("a `## Pages` section").split("\n## ").next().unwrap();
    let pages_listed = profile_pages();
    assert!(pages_listed.len() >= 7, "the profile is split by concern: {pages_listed:?}");
    for page in pages_listed {
        let name = page.trim_start_matches("device-profile/");
        assert!(pages.contains(&format!("]({name})")), "device-profile/README.md's Pages table does not link {name}");
        if name != "phone-helper.md" {
            assert!(read(&page).contains("](README.md"), "{page} does not link back to the index");
        }
    }
}

/// Which page details each tool: the concern a reader looks under. A tool added to the code without a place here
/// fails, and so does a tool's entry (`- **`android_…`** —`) found on another page or on two.
const TOOL_PAGES: &[(&str, &[&str])] = &[
    (
        "observation.md",
        &[
            "android_device_status",
            "android_ui_dump",
            "android_ui_wait",
            "android_screenshot",
            "android_observe",
            "android_logcat",
            "android_notifications",
            "android_screen_record",
        ],
    ),
    (
        "input.md",
        &[
            "android_tap",
            "android_long_press",
            "android_scroll",
            "android_swipe",
            "android_pinch",
            "android_gesture",
            "android_input_text",
            "android_key",
            "android_wake",
            "android_unlock",
            "android_lock",
            "android_rotate",
            "android_batch",
            "android_clipboard",
            "android_request_human",
        ],
    ),
    (
        "apps.md",
        &[
            "android_app_list",
            "android_permission",
            "android_open_url",
            "android_app_launch",
            "android_app_stop",
            "android_app_install",
            "android_app_uninstall",
            "android_app_clear_data",
            "android_shell",
        ],
    ),
    ("files.md", &["android_file_pull", "android_file_push"]),
];

/// Every tool the binary can declare (the risky ones enabled) is detailed exactly once, on the page of its concern;
/// the risky opt-in tools under apps.md's "Opt-in tools" heading line.
#[test]
fn each_tool_is_detailed_once_on_the_page_of_its_concern() {
    let all = xagent_adb_connector::policy::Policy {
        enabled_risky_tools: xagent_adb_connector::policy::RISKY_TOOLS.iter().map(|s| s.to_string()).collect(),
        shell_allow_prefixes: vec!["getprop ".into()],
        ..Default::default()
    };
    let adb = xagent_adb_connector::device::adb::AdbBackend::new(Vec::new());
    let registry = xagent_adb_connector::tools::Registry::device_tools_with(&adb, &std::sync::Arc::new(all));
    let mut tools: Vec<String> = registry.ids().map(str::to_owned).collect();
    tools.sort();
    let mut placed: Vec<String> = TOOL_PAGES.iter().flat_map(|(_, ids)| ids.iter().map(|s| s.to_string())).collect();
    placed.sort();
    assert_eq!(placed, tools, "TOOL_PAGES (left) must place every tool of the registry (right), once");

    let mut problems = Vec::new();
    for (page, ids) in TOOL_PAGES {
        for id in *ids {
            let entry = format!("- **`{id}`** —");
            let found: Vec<String> =
                profile_pages().into_iter().filter(|p| read(p).lines().any(|l| l.starts_with(&entry))).collect();
            if found != [format!("device-profile/{page}")] {
                problems.push(format!("{id}: detailed on {found:?}, expected device-profile/{page} alone"));
            }
        }
    }
    let apps = read("device-profile/apps.md");
    let opt_in = apps.split("\nOpt-in tools").nth(1).expect("apps.md has its `Opt-in tools` part");
    for risky in xagent_adb_connector::policy::RISKY_TOOLS {
        if !opt_in.contains(&format!("- **`{risky}`** —")) {
            problems.push(format!("{risky} is risky but not detailed under apps.md's `Opt-in tools`"));
        }
    }
    assert!(problems.is_empty(), "tool entries out of place:\n{}", problems.join("\n"));
}

/// Every stable error code has a row of the errors page's §7 table (its first cell), not just a mention elsewhere.
#[test]
fn every_error_code_has_a_row_on_the_errors_page() {
    let page = read("device-profile/errors-and-limits.md");
    let table = page.split("## 7. Error codes").nth(1).expect("§7 on errors-and-limits.md").split("\n## ").next();
    let first_cells: Vec<String> =
        table.unwrap().lines().filter(|l| l.starts_with("| `")).map(|l| cells(l)[0].clone()).collect();
    let missing: Vec<&str> = xagent_adb_connector::protocol::errors::ErrorCode::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| !first_cells.iter().any(|cell| cell.contains(&format!("`{c}`"))))
        .collect();
    assert!(missing.is_empty(), "error codes without a row in errors-and-limits.md §7: {missing:?}");
}

/// The leading quantity of a default as written in the docs or `--help`, normalised: "10 min" and "10m" → "10m",
/// "512 MiB" → "512mib", "128 (1024 in total)" → "128".
fn leading_quantity(text: &str) -> Option<String> {
    let start = text.find(|c: char| c.is_ascii_digit())?;
    let rest = &text[start..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit() || *c == ',').filter(|c| *c != ',').collect();
    let after = rest.trim_start_matches(|c: char| c.is_ascii_digit() || c == ',').trim_start();
    let unit: String = after.chars().take_while(|c| c.is_ascii_alphabetic()).collect::<String>().to_lowercase();
    let unit = match unit.as_str() {
        "min" | "m" => "m",
        "s" | "h" | "ms" | "kib" | "mib" | "gib" => unit.as_str(),
        _ => "",
    };
    Some(format!("{digits}{unit}"))
}

/// `serve --help`'s defaults: flag → default.
fn serve_help_defaults() -> Vec<(String, String)> {
    let out = Command::new(BIN).args(["serve", "--help"]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    let mut flag = String::new();
    let mut defaults = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("--") || (t.starts_with('-') && t.contains(", --")) {
            flag = t.split([' ', ',']).find(|w| w.starts_with("--")).unwrap_or("").to_string();
        } else if let Some(d) = t.strip_prefix("[default: ") {
            defaults.push((flag.clone(), d.trim_end_matches(']').to_string()));
        }
    }
    defaults
}

/// The limits the profile states with their flags are the binary's defaults, on the page of their concern: the
/// rows of errors-and-limits.md's "Limits against hostile clients" table that name a flag, and the
/// "`--flag` … default **X**" of the transfer plane (files.md) and the instance lease (binding.md).
#[test]
fn the_profiles_limits_are_the_binarys_defaults_on_the_right_page() {
    let defaults = serve_help_defaults();
    let default_of = |flag: &str| defaults.iter().find(|(f, _)| f == flag).map(|(_, d)| d.clone());
    let mut checked = Vec::new();
    let mut wrong = Vec::new();
    let page = read("device-profile/errors-and-limits.md");
    let clients = page.split("### Limits against hostile clients").nth(1).expect("the hostile-clients limits table");
    let clients = clients.split("\n#").next().unwrap();
    for row in clients.lines().filter(|l| l.starts_with("| ") && !l.starts_with("| Limit") && !l.starts_with("|--")) {
        let c = cells(row);
        let Some(flag) = c[0].split('`').find(|w| w.starts_with("--")) else { continue };
        // A flag without a default (`--allowed-host`, `--allow-no-api-key-on-network`) states a rule, not a number.
        let Some(default) = default_of(flag) else { continue };
        let (doc, bin) = (leading_quantity(&c[1]), leading_quantity(&default));
        if doc.is_none() || doc != bin {
            wrong.push(format!("errors-and-limits.md: {flag} default {:?}, the binary's {bin:?}", c[1]));
        }
        checked.push(flag.to_string());
    }
    for (file, flags) in [
        ("device-profile/files.md", &["--file-ttl", "--cache-max-bytes", "--cache-max-files"][..]),
        ("device-profile/binding.md", &["--lease-grace"][..]),
    ] {
        let text = read(file).split_whitespace().collect::<Vec<_>>().join(" ");
        for flag in flags {
            let said = text
                .split(&format!("`{flag}`"))
                .nth(1)
                .and_then(|rest| rest.split_once("default **"))
                .map(|(_, d)| d.split("**").next().unwrap().to_string());
            let bin = leading_quantity(&default_of(flag).unwrap_or_else(|| panic!("{flag} has no default")));
            let doc = said.as_deref().and_then(leading_quantity);
            if doc.is_none() || doc != bin {
                wrong.push(format!("{file}: {flag} default {said:?}, the binary's {bin:?}"));
            }
            checked.push(flag.to_string());
        }
    }
    assert!(checked.len() >= 10, "the limits found: {checked:?}");
    assert!(wrong.is_empty(), "limits that disagree with `serve --help`:\n{}", wrong.join("\n"));
}
