//! The phone helper's real bytecode (`phone-helper/xagent-helper.dex`, see `phone-helper/README.md`): the
//! committed dex is what its smali assembles to, byte for byte, and it answers every protocol case of
//! `tests/fixtures/phone-helper/` on a host JVM — `enjarify` turns the dex into a jar, which runs against the
//! stub `android.*` classes of `tests/phone_helper/stubs/` (compiled here with `javac`) that record what the
//! helper asks of Android. `tests/phone_helper/Driver.java` plays the cases, one child JVM each.
//!
//! Needs Debian's `libsmali-java`, `dexdump`, `enjarify` and `default-jdk-headless` (CI's `.ci/run` installs
//! them); nothing is downloaded and nothing outside the checkout is read.

use std::path::{Path, PathBuf};
use std::process::Command;

const PACKAGES: &str = "apt-get install -y libsmali-java dexdump enjarify default-jdk-headless";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A build tool from the Debian packages, or a failure that says how to get it.
fn tool(name: &str) -> PathBuf {
    let path = Path::new("/usr/bin").join(name);
    assert!(
        path.exists(),
        "tests/phone_helper.rs needs `{name}` at {}: install the tools with `{PACKAGES}` (CI's .ci/run does)",
        path.display()
    );
    path
}

/// A fresh directory under target/ for this test's build steps (tests run in parallel).
fn scratch() -> tempfile::TempDir {
    tempfile::Builder::new().prefix("phone_helper").tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn run(what: &str, cmd: &mut Command) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: could not start: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed ({}):\n{text}", out.status);
    text
}

fn committed_dex() -> Vec<u8> {
    std::fs::read(repo().join("phone-helper/xagent-helper.dex")).expect("phone-helper/xagent-helper.dex")
}

#[test]
fn reassembling_the_smali_reproduces_the_committed_dex() {
    tool("smali");
    tool("dexdump");
    let dir = scratch();
    let out = dir.path().join("xagent-helper.dex");
    run("phone-helper/build.sh", Command::new("bash").arg(repo().join("phone-helper/build.sh")).arg(&out));
    let built = std::fs::read(&out).unwrap();
    let committed = committed_dex();
    // dex version 038 is what `--api 26` gives: Android 8.0, the helper's floor (035 would mean the flag was lost)
    assert_eq!(&built[..8], b"dex\n038\0", "the helper must be assembled with --api 26");
    assert!(
        built == committed,
        "phone-helper/xagent-helper.dex is not what phone-helper/smali assembles to ({} bytes built, {} committed): \
         run phone-helper/build.sh and commit the dex with its source",
        built.len(),
        committed.len()
    );
}

#[test]
fn the_helper_bytecode_answers_every_protocol_case_on_a_host_jvm() {
    let (java, javac, enjarify) = (tool("java"), tool("javac"), tool("enjarify"));
    let dir = scratch();
    let dex = dir.path().join("helper.dex");
    std::fs::write(&dex, committed_dex()).unwrap();
    let jar = dir.path().join("helper.jar");
    // enjarify's wrapper runs the first python3 on PATH; Debian's is the one with its module
    let path = format!("/usr/bin:{}", std::env::var("PATH").unwrap_or_default());
    let said = run("enjarify", Command::new(enjarify).env("PATH", path).arg("-f").arg("-o").arg(&jar).arg(&dex));
    assert!(said.contains("0 classes had errors"), "enjarify could not translate every class:\n{said}");

    let stubs_src = repo().join("tests/phone_helper/stubs");
    let mut sources = Vec::new();
    java_files(&stubs_src, &mut sources);
    assert!(!sources.is_empty(), "no stub sources under {}", stubs_src.display());
    let stubs = dir.path().join("stubs");
    run("javac (stubs)", Command::new(&javac).arg("-d").arg(&stubs).args(&sources));
    let driver = dir.path().join("driver");
    run(
        "javac (driver)",
        Command::new(&javac).arg("-d").arg(&driver).arg(repo().join("tests/phone_helper/Driver.java")),
    );

    let report = run(
        "the JVM protocol cases (tests/phone_helper/Driver.java)",
        Command::new(java)
            .arg("-cp")
            .arg(&driver)
            .arg("Driver")
            .arg(&jar)
            .arg(&stubs)
            .arg(repo().join("tests/fixtures/phone-helper")),
    );
    let cases = std::fs::read_dir(repo().join("tests/fixtures/phone-helper"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "case"))
        .count();
    assert!(report.contains(&format!("{cases} cases, 0 failed")), "not every case ran:\n{report}");
}

/// Every verb the helper dispatches is exercised by some case: smali does not type-check, so a verb no case
/// sends is bytecode nobody has run.
#[test]
fn every_verb_of_the_helper_is_played_by_a_case() {
    let smali = std::fs::read_to_string(repo().join("phone-helper/smali/xagent/Helper.smali")).unwrap();
    let dispatch = &smali[smali.find(".method static dispatch(").unwrap()..];
    let dispatch = &dispatch[..dispatch.find(".end method").unwrap()];
    // each verb is a string constant compared with equals() on the next line
    let lines: Vec<&str> = dispatch.lines().map(str::trim).collect();
    let verbs: Vec<&str> = lines
        .windows(2)
        .filter(|w| w[1].contains("Ljava/lang/String;->equals("))
        .filter_map(|w| w[0].strip_prefix("const-string v1, \"")?.strip_suffix('"'))
        .collect();
    assert!(verbs.len() >= 10, "found only {verbs:?} in dispatch");
    let mut sent = String::new();
    for e in std::fs::read_dir(repo().join("tests/fixtures/phone-helper")).unwrap() {
        sent.push_str(&std::fs::read_to_string(e.unwrap().path()).unwrap());
    }
    for verb in verbs {
        let played = sent.lines().any(|l| l.strip_prefix("> ").and_then(|r| r.split(' ').nth(1)) == Some(verb));
        assert!(played, "no case in tests/fixtures/phone-helper/ sends the verb `{verb}`");
    }
}

/// `device-profile/phone-helper.md` documents the helper as it is: its greeting is the one the bytecode sends,
/// and every verb it dispatches and every error code a case sees it answer has a row there.
#[test]
fn the_protocol_page_agrees_with_the_helper() {
    let doc = std::fs::read_to_string(repo().join("device-profile/phone-helper.md")).unwrap();
    let hello = std::fs::read_to_string(repo().join("tests/fixtures/phone-helper/01-hello.case")).unwrap();
    let greeting = hello.lines().find_map(|l| l.strip_prefix("< * hello ")).expect("01-hello.case has the greeting");
    assert!(
        doc.contains(&format!("* hello {greeting}")),
        "device-profile/phone-helper.md does not quote the greeting the helper sends: * hello {greeting}"
    );
    let smali = std::fs::read_to_string(repo().join("phone-helper/smali/xagent/Helper.smali")).unwrap();
    let dispatch = &smali[smali.find(".method static dispatch(").unwrap()..];
    let dispatch = &dispatch[..dispatch.find(".end method").unwrap()];
    let lines: Vec<&str> = dispatch.lines().map(str::trim).collect();
    for w in lines.windows(2).filter(|w| w[1].contains("Ljava/lang/String;->equals(")) {
        let verb = w[0].strip_prefix("const-string v1, \"").and_then(|v| v.strip_suffix('"')).unwrap();
        let named = doc.contains(&format!("`ID {verb}`")) || doc.contains(&format!("`ID {verb} "));
        assert!(named, "device-profile/phone-helper.md §4 has no row for `{verb}`");
    }
    for e in std::fs::read_dir(repo().join("tests/fixtures/phone-helper")).unwrap() {
        for line in std::fs::read_to_string(e.unwrap().path()).unwrap().lines() {
            let Some(code) = line.strip_prefix("< ").and_then(|r| r.split(' ').skip_while(|f| *f != "err").nth(1))
            else {
                continue;
            };
            assert!(doc.contains(&format!("| `{code}` |")), "device-profile/phone-helper.md §5 lacks error `{code}`");
        }
    }
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
