//! Injects build facts (`git_tag`, `git_rev`, `build_time`) that the Connector Card and `/health` must report
//! identically (protocol §4.3). Honours `SOURCE_DATE_EPOCH` so release builds are reproducible.
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// The git files the build facts come from, only those that exist: cargo treats a watched path that is missing as
/// changed, so watching `packed-refs` in a repository that was never packed reran this script (and relinked the
/// crate) on every build. Watched: `HEAD`, the branch it names (its loose file, or while it lives only in
/// `packed-refs` the folder its loose file would appear in), `refs/tags` (for `git_tag`) and `packed-refs` once it
/// exists. Not the whole `refs/`: in a repository shared by worktrees every other branch's commit touched it and
/// rebuilt this one. `tests/build_script.rs` includes this file to check it.
pub fn watched_git_paths(git_dir: &str, common: &str, head_ref: Option<&str>) -> Vec<String> {
    let exists = |p: &String| std::path::Path::new(p).exists();
    let mut paths = vec![format!("{git_dir}/HEAD")];
    if let Some(r) = head_ref {
        let loose = format!("{common}/{r}");
        let folder = match loose.rsplit_once('/') {
            Some((dir, _)) => dir.to_string(),
            None => common.to_string(),
        };
        paths.push(if exists(&loose) { loose } else { folder });
    }
    paths.push(format!("{common}/refs/tags"));
    paths.push(format!("{common}/packed-refs"));
    paths.into_iter().filter(exists).collect()
}

fn main() {
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-env-changed=XAGENT_BUILD_GIT_REV");
    println!("cargo:rerun-if-changed=build.rs");
    // In a linked worktree `.git` is a file: ask git where HEAD and the refs (tags) really live.
    let git_dir = git(&["rev-parse", "--git-dir"]).unwrap_or_else(|| ".git".into());
    let common = git(&["rev-parse", "--git-common-dir"]).unwrap_or_else(|| git_dir.clone());
    let head_ref = git(&["symbolic-ref", "-q", "HEAD"]);
    for path in watched_git_paths(&git_dir, &common, head_ref.as_deref()) {
        println!("cargo:rerun-if-changed={path}");
    }

    let rev = std::env::var("XAGENT_BUILD_GIT_REV")
        .ok()
        .or_else(|| git(&["rev-parse", "--short=7", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    // Only a tag that really points at this commit; an untagged build reports none rather than a guess.
    let tag = git(&["describe", "--tags", "--exact-match"]).unwrap_or_default();
    let secs = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or_else(|| SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() as i64);
    let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    // The protocol's example uses YYMMDDhhmm (UTC), e.g. "2607241200".
    let build_time = format!("{:02}{:02}{:02}{:02}{:02}", y % 100, mo, d, rem / 3600, (rem % 3600) / 60);

    let rfc3339 = format!("{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, (rem % 3600) / 60, rem % 60);
    let tagged = if tag.is_empty() { String::new() } else { format!(", tag {tag}") };
    println!("cargo:rustc-env=XAGENT_VERSION_DETAIL=git {rev}{tagged}, built {rfc3339}");
    println!("cargo:rustc-env=XAGENT_GIT_REV={rev}");
    println!("cargo:rustc-env=XAGENT_GIT_TAG={tag}");
    println!("cargo:rustc-env=XAGENT_BUILD_TIME={build_time}");
}
