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
