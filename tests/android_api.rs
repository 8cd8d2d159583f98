//! Stubs that cannot lie (issue 46 item 3). `tests/fixtures/android-api/signatures.tsv` holds, per API level 26–36,
//! every framework member the phone helper touches as the real framework sources declare it (class, name, parameter
//! types, return type, static or not; each row with its repository, commit and path:line; made by `extract.py`
//! through `make.sh` in the same folder). Two things are held against it:
//!
//! - the helper's smali (`phone-helper/smali/xagent/`): every direct reference to `android.*`/`com.android.*` must
//!   exist with its exact descriptor at every level 26–36, and every reflective lookup (`Class.forName`,
//!   `getMethod`/`getDeclaredMethod`/`getConstructor`/`getField`…, the by-name binder calls through `Helper.call`,
//!   `flag`, `field`, `service`) carries a `# api A..B CLASS[#MEMBER]` line — the range its sdk guards give it — that
//!   must agree with what the smali's own constants say (class names, method names, parameter classes, read by
//!   following the registers) and must resolve in the table at every level of that range;
//! - the stub `android.*` classes of `tests/phone_helper/stubs/` that the JVM cases run the helper against: each
//!   public or protected member the helper touches must exist with exactly that signature at every level of the
//!   stub's range (`xagentstub.Api`, 26–36 when not annotated), read by reflection from the compiled stubs.
//!
//! Needs `javac` and `java` (Debian's `default-jdk-headless`, as tests/phone_helper.rs does); nothing is
//! downloaded and nothing outside the checkout is read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const LEVELS: std::ops::RangeInclusive<u32> = 26..=36;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One row of the table: a member as one API level's source declares it.
#[derive(Debug, Clone)]
struct Row {
    api: u32,
    class: String,
    member: String,
    stat: String,
    params: String,
    ret: String,
    at: String,
}

struct Table {
    rows: Vec<Row>,
    /// (api, class, member) → rows
    by: BTreeMap<(u32, String, String), Vec<Row>>,
}

impl Table {
    fn load() -> Table {
        let path = repo().join("tests/fixtures/android-api/signatures.tsv");
        let text = std::fs::read_to_string(&path).expect("tests/fixtures/android-api/signatures.tsv");
        let mut rows = Vec::new();
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.starts_with("api\t")) {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 8, "signatures.tsv: a row has 8 fields: {line:?}");
            rows.push(Row {
                api: f[0].parse().unwrap_or_else(|_| panic!("signatures.tsv: bad api in {line:?}")),
                class: f[1].into(),
                member: f[2].into(),
                stat: f[3].into(),
                params: f[4].into(),
                ret: f[5].into(),
                at: format!("{} {}", f[6], f[7]),
            });
        }
        let mut by: BTreeMap<_, Vec<Row>> = BTreeMap::new();
        for r in &rows {
            by.entry((r.api, r.class.clone(), r.member.clone())).or_default().push(r.clone());
        }
        Table { rows, by }
    }

    fn get(&self, api: u32, class: &str, member: &str) -> &[Row] {
        self.by.get(&(api, class.to_string(), member.to_string())).map(Vec::as_slice).unwrap_or(&[])
    }

    /// What the table has for this name at this level, for an error message.
    fn has(&self, api: u32, class: &str, member: &str) -> String {
        let rows = self.get(api, class, member);
        if rows.is_empty() {
            return if self.get(api, class, "<class>").is_empty() {
                format!("API {api} has no class {class}")
            } else {
                format!("API {api} has no {class}#{member}")
            };
        }
        let shapes: Vec<String> =
            rows.iter().map(|r| format!("{} {}({}) {} [{}]", r.stat, r.member, r.params, r.ret, r.at)).collect();
        format!("API {api} has only {}", shapes.join("; "))
    }
}

/// 26, 27, 28, 31 → "26..28, 31"
fn levels(apis: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < apis.len() {
        let mut j = i;
        while j + 1 < apis.len() && apis[j + 1] == apis[j] + 1 {
            j += 1;
        }
        out.push(if i == j { apis[i].to_string() } else { format!("{}..{}", apis[i], apis[j]) });
        i = j + 1;
    }
    out.join(", ")
}

#[test]
fn the_table_names_a_source_for_every_level_and_every_row() {
    let text = std::fs::read_to_string(repo().join("tests/fixtures/android-api/signatures.tsv")).unwrap();
    let table = Table::load();
    for api in LEVELS {
        let source = text
            .lines()
            .find_map(|l| l.strip_prefix(&format!("# source api{api} ")))
            .unwrap_or_else(|| panic!("signatures.tsv names no source for API {api}"));
        let f: Vec<&str> = source.split(' ').collect();
        assert!(
            f.len() == 3 && f[0].contains('/') && f[1].len() == 40 && f[1].chars().all(|c| c.is_ascii_hexdigit()),
            "API {api}'s source is not `repository commit prefix`: {source}"
        );
        let rows = table.rows.iter().filter(|r| r.api == api).count();
        assert!(rows > 50, "API {api} has only {rows} rows in signatures.tsv");
    }
    for r in &table.rows {
        let (sid, at) = r.at.split_once(' ').unwrap();
        assert_eq!(sid, format!("api{}", r.api), "row {r:?} cites another level's source");
        let (path, line) = at.rsplit_once(':').unwrap();
        assert!(path.ends_with(".java") && line.parse::<u32>().is_ok_and(|n| n > 0), "row {r:?}: bad path:line");
    }
}

// ---------------------------------------------------------------------------------------------- the smali

/// What a register is known to hold, read straight down a method (branches are not followed: a value is what
/// the nearest write above set, which is what the smali's straight-line lookup sequences rely on).
#[derive(Clone, Debug, PartialEq)]
enum Val {
    Str(String),
    Int(i64),
    Class(String),
    Classes(Vec<Option<String>>),
    Unknown,
}

/// `# api A..B SPEC`: a reflective lookup's range and target.
#[derive(Clone, Debug)]
struct Annot {
    file: String,
    line: usize,
    from: u32,
    to: u32,
    class: String,
    /// None: the class itself
    member: Option<String>,
    /// None: a field or a class; Some("*"): any parameters (a by-name call); Some(list)
    params: Option<String>,
    field_type: Option<String>,
}

fn parse_annot(file: &str, line: usize, text: &str) -> Result<Option<Annot>, String> {
    let Some(rest) = text.trim().strip_prefix("# api ") else { return Ok(None) };
    if rest.starts_with("generic") {
        return Ok(Some(Annot {
            file: file.into(),
            line,
            from: 0,
            to: 0,
            class: String::new(),
            member: None,
            params: None,
            field_type: None,
        }));
    }
    let bad = || format!("{file}:{line}: `# api` wants `A..B CLASS[#MEMBER]` or `generic`: {text:?}");
    let mut words = rest.split_whitespace();
    let (from, to) = words.next().and_then(|r| r.split_once("..")).ok_or_else(bad)?;
    let (from, to): (u32, u32) = (from.parse().map_err(|_| bad())?, to.parse().map_err(|_| bad())?);
    let spec = words.next().ok_or_else(bad)?;
    if from > to || !LEVELS.contains(&from) || !LEVELS.contains(&to) {
        return Err(format!("{file}:{line}: range {from}..{to} is not within 26..36"));
    }
    let (class, member) = match spec.split_once('#') {
        None => (spec.to_string(), None),
        Some((c, m)) => (c.to_string(), Some(m.to_string())),
    };
    let mut a = Annot { file: file.into(), line, from, to, class, member: None, params: None, field_type: None };
    if let Some(m) = member {
        if let Some((name, params)) = m.split_once('(') {
            a.member = Some(name.into());
            a.params = Some(params.strip_suffix(')').ok_or_else(bad)?.into());
        } else if let Some((name, ty)) = m.split_once(':') {
            a.member = Some(name.into());
            a.field_type = Some(ty.into());
        } else {
            a.member = Some(m);
        }
    }
    Ok(Some(a))
}

impl Annot {
    fn generic(&self) -> bool {
        self.class.is_empty()
    }
}

/// A JVM descriptor list (`JJI[Landroid/view/X;`) as binary type names.
fn desc_types(d: &str) -> Vec<String> {
    let b = d.as_bytes();
    let (mut out, mut i) = (Vec::new(), 0);
    while i < b.len() {
        let mut dims = 0;
        while b[i] == b'[' {
            dims += 1;
            i += 1;
        }
        let t = if b[i] == b'L' {
            let j = i + d[i..].find(';').unwrap();
            let t = d[i + 1..j].replace('/', ".");
            i = j + 1;
            t
        } else {
            i += 1;
            prim(b[i - 1]).to_string()
        };
        out.push(format!("{t}{}", "[]".repeat(dims)));
    }
    out
}

fn prim(c: u8) -> &'static str {
    match c {
        b'I' => "int",
        b'J' => "long",
        b'Z' => "boolean",
        b'F' => "float",
        b'D' => "double",
        b'B' => "byte",
        b'C' => "char",
        b'S' => "short",
        b'V' => "void",
        _ => panic!("not a descriptor: {}", c as char),
    }
}

/// The registers of an invoke: `{v0, v1}`, `{v0 .. v3}`, `{}`.
fn invoke_regs(line: &str) -> Vec<String> {
    let inner = &line[line.find('{').unwrap() + 1..line.find('}').unwrap()];
    if let Some((a, b)) = inner.split_once(" .. ") {
        let (k, a): (char, u32) = (a.trim().chars().next().unwrap(), a.trim()[1..].parse().unwrap());
        let b: u32 = b.trim()[1..].parse().unwrap();
        return (a..=b).map(|n| format!("{k}{n}")).collect();
    }
    inner.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()
}

/// A lookup the smali makes, with what its registers say about it.
#[derive(Debug)]
struct Lookup {
    file: String,
    line: usize,
    what: &'static str,
    class: Option<String>,
    member: Option<String>,
    params: Option<Vec<String>>,
}

/// A direct reference: `invoke-* {…}, Landroid/…;->name(desc)ret` or a field access.
struct Direct {
    file: String,
    line: usize,
    stat: bool,
    class: String,
    name: String,
    /// "-" for a field
    params: String,
    /// the return type, or the field's type
    ret: String,
    field: bool,
}

struct Smali {
    direct: Vec<Direct>,
    bound: Vec<(Lookup, Vec<Annot>)>,
    errors: Vec<String>,
}

fn read_smali() -> Smali {
    let dir = repo().join("phone-helper/smali/xagent");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "smali"))
        .collect();
    files.sort();
    let mut out = Smali { direct: Vec::new(), bound: Vec::new(), errors: Vec::new() };
    for path in files {
        let file = format!("phone-helper/smali/xagent/{}", path.file_name().unwrap().to_string_lossy());
        let text = std::fs::read_to_string(&path).unwrap();
        let mut regs: BTreeMap<String, Val> = BTreeMap::new();
        let mut result = Val::Unknown;
        let mut pending: Vec<Annot> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.starts_with('#') {
                match parse_annot(&file, n, line) {
                    Ok(Some(a)) => pending.push(a),
                    Ok(None) => {}
                    Err(e) => out.errors.push(e),
                }
                continue;
            }
            if line.starts_with(".method") || line.starts_with(".end method") {
                regs.clear();
                result = Val::Unknown;
                if !pending.is_empty() && line.starts_with(".end method") {
                    for a in pending.drain(..) {
                        out.errors.push(format!("{}:{}: `# api` line bound to no lookup", a.file, a.line));
                    }
                }
                continue;
            }
            if let Some(iface) = line.strip_prefix(".implements L") {
                let iface = iface.trim_end_matches(';').replace('/', ".");
                if iface.starts_with("android.") || iface.starts_with("com.android.") {
                    let l = Lookup {
                        file: file.clone(),
                        line: n,
                        what: "implements",
                        class: Some(iface),
                        member: None,
                        params: None,
                    };
                    out.bound.push((l, std::mem::take(&mut pending)));
                }
                continue;
            }
            direct_refs(&file, n, line, &mut out.direct);
            let op = line.split_whitespace().next().unwrap_or("");
            let args: Vec<&str> = line[op.len()..].split(',').map(str::trim).collect();
            let reg = |r: &str, regs: &BTreeMap<String, Val>| regs.get(r).cloned().unwrap_or(Val::Unknown);
            match op {
                "const-string" | "const-string/jumbo" => {
                    let s = line[line.find('"').unwrap() + 1..line.rfind('"').unwrap()].to_string();
                    regs.insert(args[0].into(), Val::Str(s));
                }
                "const/4" | "const/16" | "const" | "const/high16" => {
                    let v = args[1];
                    let (neg, v) = v.strip_prefix('-').map_or((false, v), |v| (true, v));
                    let k = v.strip_prefix("0x").map_or_else(|| v.parse().ok(), |h| i64::from_str_radix(h, 16).ok());
                    regs.insert(args[0].into(), k.map_or(Val::Unknown, |k| Val::Int(if neg { -k } else { k })));
                }
                "const-class" => {
                    let d = args[1];
                    let t = desc_types(d).remove(0);
                    regs.insert(args[0].into(), Val::Class(t));
                }
                "sget-object" if args[1].ends_with("->TYPE:Ljava/lang/Class;") => {
                    let boxed = &args[1][..args[1].find(';').unwrap()];
                    let t = match boxed {
                        "Ljava/lang/Integer" => "int",
                        "Ljava/lang/Long" => "long",
                        "Ljava/lang/Boolean" => "boolean",
                        "Ljava/lang/Float" => "float",
                        _ => "?",
                    };
                    regs.insert(args[0].into(), Val::Class(t.into()));
                }
                "new-array" if args[2] == "[Ljava/lang/Class;" => {
                    let v = match reg(args[1], &regs) {
                        Val::Int(k) => Val::Classes(vec![None; k as usize]),
                        _ => Val::Unknown,
                    };
                    regs.insert(args[0].into(), v);
                }
                "aput-object" => {
                    if let (Val::Classes(mut a), Val::Int(k)) = (reg(args[1], &regs), reg(args[2], &regs)) {
                        if let Some(slot) = a.get_mut(k as usize) {
                            *slot = match reg(args[0], &regs) {
                                Val::Class(c) => Some(c),
                                _ => None,
                            };
                        }
                        regs.insert(args[1].into(), Val::Classes(a));
                    }
                }
                "move-object" | "move-object/from16" => {
                    let v = reg(args[1], &regs);
                    regs.insert(args[0].into(), v);
                }
                "move-result-object" => {
                    regs.insert(args[0].into(), std::mem::replace(&mut result, Val::Unknown));
                }
                "check-cast" => {}
                _ if op.starts_with("invoke-") => {
                    let r = invoke_regs(line);
                    let at = |k: usize| r.get(k).map(|x| reg(x, &regs)).unwrap_or(Val::Unknown);
                    let s = |v: Val| if let Val::Str(s) = v { Some(s) } else { None };
                    let c = |v: Val| if let Val::Class(c) = v { Some(c) } else { None };
                    let ps = |v: Val| {
                        if let Val::Classes(a) = v {
                            a.into_iter().collect::<Option<Vec<String>>>()
                        } else {
                            None
                        }
                    };
                    let target = line.rsplit(", ").next().unwrap_or("");
                    let mut look = |what, class, member, params| {
                        let l = Lookup { file: file.clone(), line: n, what, class, member, params };
                        out.bound.push((l, std::mem::take(&mut pending)));
                    };
                    result = Val::Unknown;
                    if target.starts_with("Ljava/lang/Class;->forName(") {
                        let name = s(at(0));
                        if let Some(name) = &name {
                            result = Val::Class(name.clone());
                        }
                        look("Class.forName", name, None, None);
                    } else if target.starts_with("Ljava/lang/Class;->getMethod(")
                        || target.starts_with("Ljava/lang/Class;->getDeclaredMethod(")
                    {
                        look("getMethod", c(at(0)), s(at(1)), ps(at(2)));
                    } else if target.starts_with("Ljava/lang/Class;->getConstructor(")
                        || target.starts_with("Ljava/lang/Class;->getDeclaredConstructor(")
                    {
                        look("getConstructor", c(at(0)), Some("<init>".into()), ps(at(1)));
                    } else if target.starts_with("Ljava/lang/Class;->getField(")
                        || target.starts_with("Ljava/lang/Class;->getDeclaredField(")
                    {
                        look("getField", c(at(0)), s(at(1)), None);
                    } else if target.starts_with("Ljava/lang/Class;->getMethods(") {
                        look("getMethods", None, None, None);
                    } else if target.starts_with("Lxagent/Helper;->call(")
                        || target.starts_with("Lxagent/Helper;->flag(")
                        || target.starts_with("Lxagent/Helper;->field(")
                    {
                        look("by-name call", None, s(at(1)), None);
                    } else if target.starts_with("Lxagent/Helper;->service(") {
                        look("service", s(at(1)), None, None);
                    } else if target.starts_with("Lxagent/Frame;->captureCall(") {
                        look("captureCall", s(at(1)), None, None);
                    } else if target.starts_with("Lxagent/Helper;->cat(") {
                        if let (Some(a), Some(b)) = (s(at(0)), s(at(1))) {
                            result = Val::Str(a + &b);
                        }
                    }
                }
                _ => {
                    // anything else that writes its first register leaves it unknown
                    if let Some(r) = args.first().filter(|r| r.starts_with('v') || r.starts_with('p')) {
                        let writes = !(op.starts_with("if-")
                            || op.starts_with("sput")
                            || op.starts_with("iput")
                            || op.starts_with("aput")
                            || op.starts_with("return")
                            || op.starts_with("monitor")
                            || op == "throw");
                        if writes {
                            regs.insert((*r).into(), Val::Unknown);
                        }
                    }
                }
            }
        }
        for a in pending {
            out.errors.push(format!("{}:{}: `# api` line bound to no lookup", a.file, a.line));
        }
    }
    out
}

/// Direct references to the framework: `invoke-* {…}, Landroid/…;->name(desc)ret` and field accesses.
fn direct_refs(file: &str, n: usize, line: &str, out: &mut Vec<Direct>) {
    let op = line.split_whitespace().next().unwrap_or("");
    let Some(target) = line.rsplit(", ").next() else { return };
    let Some(rest) = target.strip_prefix('L') else { return };
    let Some((class, member)) = rest.split_once(";->") else { return };
    let class = class.replace('/', ".");
    if !(class.starts_with("android.") || class.starts_with("com.android.")) {
        return;
    }
    if op.starts_with("invoke-") {
        let (name, sig) = member.split_at(member.find('(').unwrap());
        let close = sig.find(')').unwrap();
        let params = desc_types(&sig[1..close]).join(",");
        let ret = desc_types(&sig[close + 1..]).remove(0);
        let stat = op.starts_with("invoke-static");
        out.push(Direct { file: file.into(), line: n, stat, class, name: name.into(), params, ret, field: false });
    } else if op.starts_with("sget") || op.starts_with("sput") || op.starts_with("iget") || op.starts_with("iput") {
        let (name, ty) = member.split_once(':').unwrap();
        let ty = desc_types(ty).remove(0);
        out.push(Direct {
            file: file.into(),
            line: n,
            stat: op.starts_with('s'),
            class,
            name: name.into(),
            params: "-".into(),
            ret: ty,
            field: true,
        });
    }
}

/// Whether an annotation names what the smali's registers say the lookup is: its member and parameters where the
/// registers know them. The class must agree too, except that several annotations of one lookup may name other
/// classes (a lookup reached from branches the straight-down reading cannot tell apart: InputManagerGlobal on 34+,
/// InputManager before); `class_agrees` is asked of at least one of them.
fn agrees(l: &Lookup, a: &Annot) -> bool {
    if a.generic() {
        return l.class.is_none();
    }
    match l.what {
        // the class (a Stub, DisplayCaptureArgs) is given; what is looked up from it is the class, its nested
        // classes and members, or a member taking it
        "Class.forName" | "service" | "captureCall" | "implements" => true,
        _ => {
            l.member.as_deref().is_none_or(|m| a.member.as_deref() == Some(m))
                && l.params.as_ref().is_none_or(|p| a.params.as_deref() == Some(p.join(",").as_str()))
        }
    }
}

fn class_agrees(l: &Lookup, a: &Annot) -> bool {
    let Some(c) = &l.class else { return true };
    match l.what {
        "service" | "captureCall" => {
            a.class == *c
                || a.class.starts_with(&format!("{c}$"))
                || a.params.as_deref().is_some_and(|p| p.split(',').any(|t| t == c))
        }
        _ => a.class == *c,
    }
}

/// Whether the annotation's member exists at this level; the reason when not.
fn resolves(table: &Table, api: u32, a: &Annot) -> Result<(), String> {
    let Some(member) = &a.member else {
        return if table.get(api, &a.class, "<class>").is_empty() {
            Err(format!("API {api} has no class {}", a.class))
        } else {
            Ok(())
        };
    };
    let rows = table.get(api, &a.class, member);
    let ok = match (&a.params, &a.field_type) {
        (Some(p), _) if p == "*" => rows.iter().any(|r| r.params != "-"),
        (Some(p), _) => rows.iter().any(|r| &r.params == p),
        (None, Some(t)) => rows.iter().any(|r| r.params == "-" && &r.ret == t),
        (None, None) => !rows.is_empty(),
    };
    if ok {
        Ok(())
    } else {
        Err(table.has(api, &a.class, member))
    }
}

#[test]
fn every_framework_reference_of_the_smali_resolves_at_every_level_it_is_used_on() {
    let table = Table::load();
    let smali = read_smali();
    let mut errors = smali.errors.clone();
    // direct references: linked by the VM wherever they run, so 26..36
    let mut direct = 0;
    for Direct { file, line: n, stat, class, name, params, ret, field } in &smali.direct {
        direct += 1;
        let want_stat = if *stat { "static" } else { "instance" };
        let missing: Vec<u32> = LEVELS
            .filter(|&api| {
                !table.get(api, class, name).iter().any(|r| {
                    &r.params == params && &r.ret == ret && r.stat == want_stat && (*field == (r.params == "-"))
                })
            })
            .collect();
        if let Some(&first) = missing.first() {
            errors.push(format!(
                "{file}:{n}: {want_stat} {class}#{name}({params}) {ret} does not exist at API {}: {}",
                levels(&missing),
                table.has(first, class, name)
            ));
        }
    }
    // reflective lookups: annotated, the annotation agreeing with the registers, resolving over its range
    let mut annotated = 0;
    for (l, annots) in &smali.bound {
        if annots.is_empty() {
            errors.push(format!(
                "{}:{}: {} ({}{}) has no `# api A..B CLASS#MEMBER` line above it",
                l.file,
                l.line,
                l.what,
                l.class.as_deref().unwrap_or("?"),
                l.member.as_deref().map(|m| format!("#{m}")).unwrap_or_default()
            ));
            continue;
        }
        if !annots.iter().any(|a| a.generic() || class_agrees(l, a)) {
            errors.push(format!(
                "{}:{}: no `# api` line above the {} names the class the smali's registers hold there: {:?}",
                l.file, l.line, l.what, l.class
            ));
        }
        for a in annots {
            if !agrees(l, a) || (l.what == "captureCall" || l.what == "service") && !class_agrees(l, a) {
                errors.push(format!(
                    "{}:{}: the `# api` line says {}{}({}) but the smali's {} at line {} looks up {:?}#{:?}({:?})",
                    a.file,
                    a.line,
                    if a.generic() { "generic" } else { &a.class },
                    a.member.as_deref().map(|m| format!("#{m}")).unwrap_or_default(),
                    a.params.as_deref().unwrap_or(""),
                    l.what,
                    l.line,
                    l.class,
                    l.member,
                    l.params
                ));
            }
            if a.generic() {
                continue;
            }
            annotated += 1;
            let missing: Vec<(u32, String)> =
                (a.from..=a.to).filter_map(|api| resolves(&table, api, a).err().map(|why| (api, why))).collect();
            if let Some((_, why)) = missing.first() {
                errors.push(format!(
                    "{}:{}: {}{}{} is used on {}..{} but does not resolve at API {}: {why}",
                    a.file,
                    a.line,
                    a.class,
                    a.member.as_deref().map(|m| format!("#{m}")).unwrap_or_default(),
                    a.params.as_deref().map(|p| format!("({p})")).unwrap_or_default(),
                    a.from,
                    a.to,
                    levels(&missing.iter().map(|m| m.0).collect::<Vec<_>>())
                ));
            }
        }
    }
    println!("{direct} direct references, {annotated} annotated lookups checked at their levels");
    assert!(direct > 50 && annotated > 40, "the smali reader found too little: {direct} direct, {annotated} lookups");
    assert!(errors.is_empty(), "{} disagreements with the framework:\n{}", errors.len(), errors.join("\n"));
}

// ---------------------------------------------------------------------------------------------- the stubs

fn tool(name: &str) -> PathBuf {
    let path = Path::new("/usr/bin").join(name);
    assert!(path.exists(), "tests/android_api.rs needs `{name}`: apt-get install -y default-jdk-headless");
    path
}

fn java_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            java_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "java") {
            out.push(p);
        }
    }
}

fn run(what: &str, cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: could not start: {e}"));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{what} failed ({}):\n{text}{}", out.status, String::from_utf8_lossy(&out.stderr));
    text
}

/// The stubs' public and protected members as the compiled classes have them (tests/android_api/Dump.java).
fn stub_members() -> Vec<Vec<String>> {
    let dir = tempfile::Builder::new().prefix("android_api").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut sources = Vec::new();
    java_files(&repo().join("tests/phone_helper/stubs"), &mut sources);
    sources.push(repo().join("tests/android_api/Dump.java"));
    let classes = dir.path().join("classes");
    run("javac (stubs + Dump)", Command::new(tool("javac")).arg("-d").arg(&classes).args(&sources));
    let out = run("Dump", Command::new(tool("java")).arg("-cp").arg(&classes).arg("Dump").arg(&classes));
    out.lines().map(|l| l.split('\t').map(String::from).collect()).collect()
}

#[test]
fn every_stub_member_the_helper_touches_exists_as_written_at_its_api_levels() {
    let table = Table::load();
    let touched: BTreeSet<(String, String)> = table.rows.iter().map(|r| (r.class.clone(), r.member.clone())).collect();
    let mut errors = Vec::new();
    let (mut checked, mut vendor, mut plumbing, mut untouched) = (0, 0, 0, 0);
    for f in stub_members() {
        assert_eq!(f.len(), 10, "Dump printed {f:?}");
        let (class, member, stat, params, ret) = (&f[0], &f[1], &f[2], &f[3], &f[4]);
        let (from, to): (u32, u32) = (f[5].parse().unwrap(), f[6].parse().unwrap());
        if f[9] == "plumbing" {
            plumbing += 1;
            continue;
        }
        if f[8] == "vendor" {
            vendor += 1;
            continue;
        }
        if member == "<class>" && class.contains("$Stub$") && f[7].is_empty() {
            errors.push(format!(
                "stub {class} implements a binder interface's shape but says not which: @Api(of = \"…\", from, to)"
            ));
            continue;
        }
        let of = if f[7].is_empty() { class.clone() } else { f[7].clone() };
        if member == "<class>" && !f[7].is_empty() {
            continue;
        }
        if !touched.contains(&(of.clone(), member.clone())) {
            untouched += 1;
            continue;
        }
        if from > to || !LEVELS.contains(&from) || !LEVELS.contains(&to) {
            errors.push(format!("{class}#{member}: @Api range {from}..{to} is not within 26..36"));
            continue;
        }
        checked += 1;
        let missing: Vec<u32> = (from..=to)
            .filter(|&api| {
                let rows = table.get(api, &of, member);
                if member == "<class>" {
                    rows.is_empty()
                } else {
                    !rows.iter().any(|r| &r.params == params && &r.ret == ret && &r.stat == stat)
                }
            })
            .collect();
        if let Some(&first) = missing.first() {
            errors.push(format!(
                "stub {class}: {stat} {member}({params}) {ret} (range {from}..{to}{}) does not exist at API {}: {}",
                if f[7].is_empty() { String::new() } else { format!(", as {of}") },
                levels(&missing),
                table.has(first, &of, member)
            ));
        }
    }
    println!("{checked} stub members checked, {vendor} vendor shapes, {plumbing} plumbing, {untouched} the helper never touches");
    assert!(checked > 80, "only {checked} stub members were checked");
    assert!(errors.is_empty(), "{} stub members lie:\n{}", errors.len(), errors.join("\n"));
}
