//! Keeps the published device-profile documentation in sync with the code:
//!
//! - `device-profile/schemas/`: one JSON Schema (draft 2020-12) per tool input and output, generated from the
//!   production registry (the schemas the card serves) and compared byte for byte;
//! - `device-profile/examples/session.jsonl`: a real packet transcript recorded against the real binary, a private
//!   adb server and the simulated phone, normalised so it is deterministic, and compared line by line;
//! - `skills/connector-device-adb/SKILL.md` and the `device-profile/` pages: the skill's header name, and every tool id
//!   they mention exists (and the README's catalog has a row for every tool, risky opt-in tools included, marking
//!   exactly those as opt-in; `errors-and-limits.md` names every error code).
//!
//! Schemas and checks cover *every* tool this binary can declare: the default tools and the risky ones an operator
//! policy may enable (`src/policy.rs` `RISKY_TOOLS`).
//!
//! Regenerate the generated files with `UPDATE_PROFILE=1 cargo test --test profile_docs`.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::adb::*;
use common::*;
use serde_json::{json, Map, Value};
use xagent_adb_connector::device::adb::AdbBackend;
use xagent_adb_connector::policy::{Policy, RISKY_TOOLS};
use xagent_adb_connector::protocol::card::ToolDecl;
use xagent_adb_connector::protocol::errors::ErrorCode;
use xagent_adb_connector::tools::Registry;

const REGEN: &str = "UPDATE_PROFILE=1 cargo test --test profile_docs";
const DRAFT: &str = "https://json-schema.org/draft/2020-12/schema";
const TO_CONNECTOR: &str = "xagent→connector";
const FROM_CONNECTOR: &str = "connector→xagent";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_owned()
}

fn profile_dir() -> PathBuf {
    root().join("device-profile")
}

/// The profile's Markdown pages, the index (`README.md`) first. Not `phone-helper.md`: the helper's wire protocol
/// names Android's own libraries (`libandroid_servers.so`), not tools (`tests/phone_helper.rs` checks it).
fn profile_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(profile_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .filter(|p| !p.ends_with("README.md") && !p.ends_with("phone-helper.md"))
        .collect();
    pages.sort();
    pages.insert(0, profile_dir().join("README.md"));
    pages
}

/// `path` relative to the crate root, for messages.
fn rel(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

fn updating() -> bool {
    std::env::var("UPDATE_PROFILE").is_ok_and(|v| v == "1")
}

/// The production registry under a policy that enables every risky tool (as `src/main.rs` builds it with such a
/// `--policy`): every tool this binary can declare. Tool schemas do not depend on the policy's contents.
fn registry() -> Registry {
    let adb = AdbBackend::new(Vec::new());
    let everything = Policy {
        enabled_risky_tools: RISKY_TOOLS.iter().map(|s| s.to_string()).collect(),
        shell_allow_prefixes: vec!["getprop ".into()],
        ..Default::default()
    };
    Registry::device_tools_with(&adb, &std::sync::Arc::new(everything))
}

/// The registry without a policy file: what the default card declares.
fn default_registry() -> Registry {
    let adb = AdbBackend::new(Vec::new());
    Registry::device_tools(&adb)
}

/// The card's `tools[]` with every risky tool enabled: input schemas as served (with `connector_channel_id`
/// injected), output schemas.
fn declarations() -> Vec<ToolDecl> {
    let decls = registry().declarations();
    assert!(!decls.is_empty(), "the production registry has no tools");
    let ids: BTreeSet<&str> = decls.iter().map(|t| t.tool_id.as_str()).collect();
    for risky in RISKY_TOOLS {
        assert!(ids.contains(risky), "risky tool {risky} missing from the all-enabled registry");
    }
    decls
}

// ---- schemas -----------------------------------------------------------------------------------------------------

/// The published schema document: the served schema plus `$schema`, `$id` and `title`.
fn schema_doc(tool: &ToolDecl, kind: &str) -> Value {
    let served = if kind == "input" { &tool.input_schema } else { &tool.output_schema };
    let Value::Object(served) = served else { panic!("{} {kind} schema is not an object", tool.tool_id) };
    for k in ["$schema", "$id", "title"] {
        assert!(
            !served.contains_key(k),
            "{} {kind} schema already has `{k}`: the published header would overwrite it; adapt profile_docs.rs",
            tool.tool_id
        );
    }
    let mut doc = served.clone();
    doc.insert("$schema".into(), json!(DRAFT));
    doc.insert("$id".into(), json!(format!("urn:xagent:device.adb:{}:{kind}", tool.tool_id)));
    doc.insert("title".into(), json!(format!("{} {kind}: {}", tool.tool_id, tool.title)));
    Value::Object(doc)
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap() + "\n"
}

/// file name → expected content, for every tool of the registry.
fn expected_schema_files() -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for tool in declarations() {
        for kind in ["input", "output"] {
            out.insert(format!("{}.{kind}.json", tool.tool_id), pretty(&schema_doc(&tool, kind)));
        }
    }
    out
}

/// The published schema of `tool_id`'s `kind` (on disk; freshly generated while regenerating, since the files may
/// be rewritten by the schema test running at the same time).
fn published_schema(tool_id: &str, kind: &str) -> Value {
    if updating() {
        let tool = declarations().into_iter().find(|t| t.tool_id == tool_id).expect("tool in the registry");
        return schema_doc(&tool, kind);
    }
    let path = profile_dir().join("schemas").join(format!("{tool_id}.{kind}.json"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} is missing ({e}); regenerate with `{REGEN}`", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn compile(doc: &Value, what: &str) -> jsonschema::Validator {
    if let Err(e) = jsonschema::meta::validate(doc) {
        panic!("{what} is not a valid JSON Schema: {e}");
    }
    jsonschema::draft202012::new(doc).unwrap_or_else(|e| panic!("{what} does not compile as draft 2020-12: {e}"))
}

#[test]
fn schemas_are_generated_from_the_registry() {
    let dir = profile_dir().join("schemas");
    let expected = expected_schema_files();
    let on_disk: BTreeSet<String> = std::fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();

    if updating() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in &expected {
            let path = dir.join(name);
            if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
                std::fs::write(&path, text).unwrap();
                eprintln!("wrote {}", path.display());
            }
        }
        for stale in on_disk.iter().filter(|n| !expected.contains_key(*n)) {
            std::fs::remove_file(dir.join(stale)).unwrap();
            eprintln!("removed {stale}: no such tool in the registry");
        }
    } else {
        let mut problems = Vec::new();
        for (name, text) in &expected {
            let path = dir.join(name);
            match std::fs::read_to_string(&path) {
                Err(_) => problems.push(format!("{} is missing", rel(&path))),
                Ok(t) if &t != text => {
                    problems.push(format!("{} differs from the registry's served schema", rel(&path)))
                }
                Ok(_) => {}
            }
        }
        for stale in on_disk.iter().filter(|n| !expected.contains_key(*n)) {
            problems.push(format!(
                "{} belongs to no tool of the registry (removed or renamed tool?)",
                rel(&dir.join(stale))
            ));
        }
        assert!(
            problems.is_empty(),
            "device-profile/schemas is out of date with the tool registry:\n  {}\nRegenerate with `{REGEN}` and review the diff.",
            problems.join("\n  ")
        );
    }

    // Every published document is itself a valid draft 2020-12 schema.
    for (name, text) in &expected {
        let doc: Value = serde_json::from_str(text).unwrap();
        compile(&doc, name);
        assert_eq!(doc["$schema"], DRAFT, "{name}");
        assert!(doc["$id"].as_str().unwrap().starts_with("urn:xagent:device.adb:android_"), "{name}");
    }
}

// ---- documentation ----------------------------------------------------------------------------------------------

/// `android_…` identifiers in `text`, in order of first appearance.
fn android_ids(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while let Some(pos) = text[i..].find("android_") {
        let start = i + pos;
        let boundary = start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let mut end = start + "android_".len();
        while end < bytes.len() && (bytes[end].is_ascii_lowercase() || bytes[end] == b'_') {
            end += 1;
        }
        let id = text[start..end].trim_end_matches('_');
        if boundary && id.len() > "android_".len() && !out.iter().any(|s| s == id) {
            out.push(id.to_owned());
        }
        i = end.max(start + 1);
    }
    out
}

/// Property names used anywhere in a schema (they may look like tool ids, e.g. `android_version`).
fn property_names(schema: &Value, out: &mut BTreeSet<String>) {
    match schema {
        Value::Object(m) => {
            if let Some(Value::Object(props)) = m.get("properties") {
                out.extend(props.keys().cloned());
            }
            m.values().for_each(|v| property_names(v, out));
        }
        Value::Array(a) => a.iter().for_each(|v| property_names(v, out)),
        _ => {}
    }
}

/// The YAML-ish front matter of a skill: `key: value` lines between the leading `---` lines.
fn front_matter(md: &str) -> BTreeMap<String, String> {
    let rest = md.strip_prefix("---\n").expect("SKILL.md starts with a `---` front matter block");
    let end = rest.find("\n---\n").expect("SKILL.md front matter ends with `---`");
    rest[..end]
        .lines()
        .filter_map(|l| l.split_once(':').map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned())))
        .collect()
}

#[test]
fn docs_name_only_real_tools_and_the_readme_covers_all() {
    let decls = declarations();
    let tools: BTreeSet<String> = decls.iter().map(|t| t.tool_id.clone()).collect();
    let mut fields = BTreeSet::new();
    for t in &decls {
        property_names(&t.input_schema, &mut fields);
        property_names(&t.output_schema, &mut fields);
    }

    let skill_path = root().join("skills/connector-device-adb/SKILL.md");
    let skill = std::fs::read_to_string(&skill_path).unwrap();
    let header = front_matter(&skill);
    assert_eq!(header.get("name").map(String::as_str), Some("connector-device-adb"), "SKILL.md header name");
    assert_eq!(xagent_adb_connector::protocol::SKILL_NAME, "connector-device-adb");
    assert!(header.get("description").is_some_and(|d| !d.is_empty()), "SKILL.md needs a one-line description");

    let readme_path = profile_dir().join("README.md");
    let readme = std::fs::read_to_string(&readme_path).unwrap();
    // The profile is an index (README.md) and pages by concern (issue 51): every page names only real tools.
    let mut docs = vec![(skill_path.clone(), skill.clone())];
    for page in profile_pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        docs.push((page, text));
    }
    for (path, text) in &docs {
        let unknown: Vec<String> =
            android_ids(text).into_iter().filter(|id| !tools.contains(id) && !fields.contains(id)).collect();
        assert!(
            unknown.is_empty(),
            "{} mentions tools that are not in the registry: {unknown:?} (registry: {tools:?})",
            path.display()
        );
    }
    // The catalog summary rows (`| `tool` | kind | yes/no | N s | … |`) state the registry's side effect and deadline.
    let reg = registry();
    let mut rows = BTreeSet::new();
    for line in readme.lines().filter(|l| l.starts_with("| `android_")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(id), Some(side), Some(deadline)) = (cells.get(1), cells.get(3), cells.get(4)) else { continue };
        if !(matches!(*side, "yes" | "no") && deadline.ends_with(" s")) {
            continue;
        }
        let id = id.trim_matches('`');
        let spec = reg.spec(id).unwrap_or_else(|| panic!("README catalog row for unknown tool {id}"));
        let kind = cells.get(2).copied().unwrap_or("");
        assert_eq!(
            kind.contains("opt-in"),
            RISKY_TOOLS.contains(&id),
            "README: the catalog row of {id} must say `opt-in` exactly when it is a risky tool (policy.rs RISKY_TOOLS)"
        );
        assert_eq!(*side == "yes", spec.side_effect, "README: side effect of {id}");
        assert_eq!(
            deadline.trim_end_matches(" s").parse::<u64>().ok(),
            Some(spec.deadline.as_secs()),
            "README: deadline of {id}"
        );
        rows.insert(id.to_owned());
    }
    let unlisted: Vec<&String> = tools.iter().filter(|t| !rows.contains(*t)).collect();
    assert!(unlisted.is_empty(), "device-profile/README.md catalog summary lacks rows for {unlisted:?}");

    let mentioned: BTreeSet<String> = docs[1..].iter().flat_map(|(_, text)| android_ids(text)).collect();
    let missing: Vec<&String> = tools.iter().filter(|t| !mentioned.contains(*t)).collect();
    assert!(missing.is_empty(), "the device-profile pages do not document these tools: {missing:?}");

    // Risky tools are exactly the ones the default card leaves out.
    let default_ids: BTreeSet<String> = default_registry().ids().map(str::to_owned).collect();
    let opt_in: BTreeSet<String> = tools.difference(&default_ids).cloned().collect();
    let risky: BTreeSet<String> = RISKY_TOOLS.iter().map(|s| s.to_string()).collect();
    assert_eq!(opt_in, risky, "tools absent from the default card vs policy.rs RISKY_TOOLS");

    // Every stable error code is on the errors page (`tests/docs_agree.rs` checks it has a row of §7's table).
    let errors = std::fs::read_to_string(profile_dir().join("errors-and-limits.md")).unwrap();
    let undocumented: Vec<&str> =
        ErrorCode::ALL.iter().map(|c| c.as_str()).filter(|c| !errors.contains(&format!("`{c}`"))).collect();
    assert!(
        undocumented.is_empty(),
        "device-profile/errors-and-limits.md does not name these error codes: {undocumented:?}"
    );
}

// ---- transcript -------------------------------------------------------------------------------------------------

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// Speaks for xAgent and records every packet in both directions (and HTTP downloads) as transcript lines.
struct Recorder {
    c: Client,
    envelope: jsonschema::Validator,
    lines: Vec<Value>,
    n: u64,
}

impl Recorder {
    async fn request(&mut self, kind: &str, channel: Option<&str>, payload: Value) -> Value {
        self.n += 1;
        let (pid, rid) = (format!("pkt_xagent_{}", self.n), format!("req_xagent_{}", self.n));
        let mut p = json!({"schema": "xagent.connector.packet/v1", "packet_id": pid, "request_id": rid,
                           "type": kind, "time": now_ms(), "payload": payload});
        if let Some(c) = channel {
            p["connector_channel_id"] = json!(c);
        }
        assert_valid(&self.envelope, &p, "sent packet");
        self.c.send_raw(&p.to_string()).await;
        self.lines.push(json!({"dir": TO_CONNECTOR, "packet": p}));
        loop {
            // `Client::recv` checks the envelope schema and any descriptor inside.
            let v = self.c.recv().await;
            assert_valid(&self.envelope, &v, "received packet");
            self.lines.push(json!({"dir": FROM_CONNECTOR, "packet": v.clone()}));
            if v["request_id"] == json!(rid) {
                assert_eq!(v["reply_to"], json!(pid));
                return v;
            }
        }
    }

    async fn invoke(&mut self, channel: &str, tool: &str, mut args: Value) -> Value {
        args["connector_channel_id"] = json!(channel);
        let call = format!("call_{}", self.n + 1);
        let payload = json!({"tool_id": tool, "arguments": args, "context": {"session_id": "session_example", "tool_call_id": call}});
        let ack = self.request("tool.invoke", Some(channel), payload).await;
        assert_eq!(ack["type"], "tool.invoke.ack");
        assert!(ack.get("error").is_none(), "{tool} failed: {ack}");
        let result = ack["payload"]["result"].clone();
        let schema = published_schema(tool, "output");
        assert_valid(&compile(&schema, tool), &result, &format!("{tool} result"));
        result
    }

    async fn download(&mut self, addr: std::net::SocketAddr, url: &str) -> HttpResponse {
        let r = http(addr, "GET", url, &[], b"").await;
        let mut headers = Map::new();
        for h in ["content-type", "content-length"] {
            if let Some(v) = r.header(h) {
                headers.insert(h.into(), json!(v));
            }
        }
        self.lines.push(json!({"dir": TO_CONNECTOR, "http": {
            "method": "GET", "path": url, "status": r.status, "headers": headers, "bytes": r.body.len()}}));
        r
    }
}

/// Replaces volatile values by stable placeholders (numbered per kind in order of first appearance).
struct Normaliser {
    serial: String,
    masked: String,
    seen: BTreeMap<&'static str, Vec<String>>,
}

/// Opaque ids the connector issues: prefix, number of hex digits, placeholder kind.
const IDS: &[(&str, usize, &str)] = &[
    ("conn_device_adb_", 24, "connector_id"),
    ("cch_adb_", 24, "connector_channel_id"),
    ("auth_", 24, "auth_session_id"),
    ("file_", 24, "file_ref"),
    ("pkt_", 24, "packet_id"),
    ("obs_", 16, "observation_id"),
];

impl Normaliser {
    fn placeholder(&mut self, kind: &'static str, value: &str) -> String {
        let list = self.seen.entry(kind).or_default();
        let i = list.iter().position(|v| v == value).unwrap_or_else(|| {
            list.push(value.to_owned());
            list.len() - 1
        });
        format!("<{kind}:{}>", i + 1)
    }

    fn string(&mut self, s: &str) -> String {
        let mut s = s.replace(&self.serial, "<serial>").replace(&self.masked, "<masked_serial>");
        for &(prefix, len, kind) in IDS {
            let mut out = String::new();
            let mut rest = s.as_str();
            while let Some(pos) = rest.find(prefix) {
                let start_ok = pos == 0 || !rest.as_bytes()[pos - 1].is_ascii_alphanumeric();
                let tail = &rest[pos + prefix.len()..];
                let hex = tail.bytes().take_while(u8::is_ascii_hexdigit).count();
                let end_ok = !tail.as_bytes().get(hex).is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_');
                out.push_str(&rest[..pos]);
                if start_ok && hex == len && end_ok {
                    let value = &rest[pos..pos + prefix.len() + len];
                    out.push_str(&self.placeholder(kind, value));
                    rest = &rest[pos + prefix.len() + len..];
                } else {
                    out.push_str(prefix);
                    rest = tail;
                }
            }
            out.push_str(rest);
            s = out;
        }
        if let Some(i) = s.find("token=") {
            let end = s[i + 6..].find('&').map_or(s.len(), |e| i + 6 + e);
            s.replace_range(i + 6..end, "<token>");
        }
        if let Some(i) = s.find("screenshot-") {
            let digits = s[i + 11..].bytes().take_while(u8::is_ascii_digit).count();
            if digits > 0 {
                s.replace_range(i + 11..i + 11 + digits, "<unix_ms>");
            }
        }
        s
    }

    fn value(&mut self, key: Option<&str>, v: &Value) -> Value {
        match v {
            Value::Number(_) if matches!(key, Some("time" | "expires_at")) => json!("<unix_ms>"),
            // How long a settled action waited depends on the machine.
            Value::Number(_) if key == Some("settle_ms") => json!("<settle_ms>"),
            // So does how long a tree read took (`effect.tree.ms`, the helper's tree: every session's default).
            Value::Number(_) if key == Some("ms") => json!("<ms>"),
            Value::String(s) => json!(self.string(s)),
            Value::Array(a) => Value::Array(a.iter().map(|x| self.value(None, x)).collect()),
            Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), self.value(Some(k), x))).collect()),
            other => other.clone(),
        }
    }
}

/// Waits (without sending any packet, so the transcript stays deterministic) until the connector's adb tracker has
/// seen a device online.
async fn wait_for_online_device(srv: &Server) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let seen = srv.logs().iter().any(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["message"] == "device state changed" && v["state"] == "online")
        });
        if seen {
            return;
        }
        assert!(Instant::now() < deadline, "the connector never saw the simulated phone online: {:#?}", srv.logs());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn first_difference(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i).copied().unwrap_or("<end of file>"), g.get(i).copied().unwrap_or("<end of file>"));
        if a != b {
            let cut = |s: &str| s.chars().take(600).collect::<String>();
            return format!("line {}:\n  file:     {}\n  recorded: {}", i + 1, cut(a), cut(b));
        }
    }
    "no line differs (trailing newline?)".into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn example_transcript_is_a_real_session() {
    tokio::time::timeout(Duration::from_secs(120), record_transcript()).await.expect("transcript test timed out");
}

async fn record_transcript() {
    let (adb, _sim, serial) = setup().await.expect("adb is required (apt-get install adb)");
    let dir = tempfile::tempdir().unwrap();
    let server = format!("127.0.0.1:{}", adb.port);
    let srv = Server::start(dir.path(), &["--adb-server", &server], &[]);
    wait_for_online_device(&srv).await;

    let mut r = Recorder {
        c: ws(srv.addr, None).await,
        envelope: schema("xagent.connector.packet.v1.schema.json"),
        lines: Vec::new(),
        n: 0,
    };
    let hello = r
        .request(
            "connector.hello",
            None,
            json!({"connector_card_id": "device.adb", "protocol_version": "3.0",
                   "supported_profiles": ["xagent.im.v2", "xagent.device.v1"]}),
        )
        .await;
    assert_eq!(hello["type"], "connector.hello.ack");
    let open = r.request("channel.open", None, json!({})).await;
    let ch = open["connector_channel_id"].as_str().unwrap().to_owned();
    let auth = r.request("auth.start", Some(&ch), json!({"flow_id": "adb_device", "input": {}})).await;
    assert_eq!(auth["payload"]["status"], "authenticated", "{auth}");

    let ui = r.invoke(&ch, "android_ui_dump", json!({"only_interactive": true})).await;
    let button = ui["elements"].as_array().unwrap().iter().find(|e| e["text"] == "Increment").expect("button").clone();
    let tap = r.invoke(&ch, "android_tap", json!({"x": button["center"][0], "y": button["center"][1]})).await;
    assert_eq!(tap["x"], button["center"][0]);

    if registry().spec("android_screenshot").is_some() {
        let shot = r.invoke(&ch, "android_screenshot", json!({})).await;
        let file = &shot["files"][0];
        let url = file["download_url"].as_str().unwrap().to_owned();
        let got = r.download(srv.addr, &url).await;
        assert_eq!(got.status, 200);
        assert_eq!(got.body.len() as u64, file["byte_size"].as_u64().unwrap());
        assert!(got.body.starts_with(&[0xFF, 0xD8]), "a JPEG");
        // One-time: the same URL is spent.
        assert_eq!(r.download(srv.addr, &url).await.status, 404, "download URLs are one-time");
    }

    let masked = xagent_adb_connector::channels::mask_serial(&serial);
    let mut norm = Normaliser { serial: serial.clone(), masked, seen: BTreeMap::new() };
    let text: String =
        r.lines.iter().map(|l| serde_json::to_string(&norm.value(None, l)).unwrap() + "\n").collect::<String>();
    assert!(!text.contains(&serial), "the serial never appears (normalised)");

    let path = profile_dir().join("examples/session.jsonl");
    if updating() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        eprintln!("wrote {}", path.display());
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{} is missing ({e}); record it with `{REGEN}`", path.display()));
    assert!(
        want == text,
        "{} no longer matches a recorded session ({}).\nIf the change is intended, re-record with `{REGEN}` and review the diff.",
        path.display(),
        first_difference(&want, &text)
    );
}
