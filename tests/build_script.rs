//! The build script watches only paths that exist (issue 51): cargo counts a missing watched path as changed, so a
//! checkout without `.git/packed-refs` reran the build script and relinked the crate on every `cargo build`.
use std::path::Path;
use std::process::Command;

// The build script itself, so the test checks the code cargo runs rather than a copy of it.
#[allow(dead_code)]
#[path = "../build.rs"]
mod build_script;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A fresh repository has never been packed: it has `HEAD` and `refs/` but no `packed-refs`.
#[test]
fn a_repository_never_packed_has_no_watched_path_that_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q"]);
    git(
        dir.path(),
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "one",
        ],
    );
    let git_dir = dir.path().join(git(dir.path(), &["rev-parse", "--git-dir"]));
    let common = dir.path().join(git(dir.path(), &["rev-parse", "--git-common-dir"]));
    assert!(!common.join("packed-refs").exists(), "the fixture must lack packed-refs");
    let head_ref = git(dir.path(), &["symbolic-ref", "-q", "HEAD"]);
    let watch =
        || build_script::watched_git_paths(git_dir.to_str().unwrap(), common.to_str().unwrap(), Some(&head_ref));
    let paths = watch();
    for p in &paths {
        assert!(Path::new(p).exists(), "the build script watches {p}, which does not exist");
    }
    assert!(paths.iter().any(|p| p.ends_with("HEAD")), "HEAD is watched: {paths:?}");
    assert!(paths.iter().any(|p| p.ends_with(&head_ref)), "the branch HEAD names is watched: {paths:?}");
    assert!(paths.iter().any(|p| p.ends_with("refs/tags")), "refs/tags is watched: {paths:?}");
    assert!(!paths.iter().any(|p| p.ends_with("/refs")), "not the whole refs/ (other branches' commits): {paths:?}");

    // Once packed, packed-refs is watched too (a tag may live only there), and the branch, now only in packed-refs,
    // is watched through the folder its loose file will reappear in on the next commit.
    git(dir.path(), &["pack-refs", "--all", "--prune"]);
    let packed = watch();
    for p in &packed {
        assert!(Path::new(p).exists(), "the build script watches {p}, which does not exist");
    }
    assert!(packed.iter().any(|p| p.ends_with("packed-refs")), "packed-refs is watched once it exists: {packed:?}");
    assert!(packed.iter().any(|p| p.ends_with("refs/heads")), "the packed branch's folder is watched: {packed:?}");
}

/// What cargo really got from the build script of this very build: every `rerun-if-changed` path exists.
#[test]
fn this_builds_watched_paths_all_exist() {
    let out_dir = Path::new(env!("OUT_DIR"));
    let output = std::fs::read_to_string(out_dir.parent().unwrap().join("output")).expect("the build script's output");
    let watched: Vec<&str> = output.lines().filter_map(|l| l.strip_prefix("cargo:rerun-if-changed=")).collect();
    assert!(!watched.is_empty(), "the build script watches something: {output}");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for p in watched {
        assert!(root.join(p).exists(), "the build script watches {p}, which does not exist");
    }
}
