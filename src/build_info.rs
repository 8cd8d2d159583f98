//! Build facts injected at compile time by `build.rs`; the card and `/health` report the same values (§4.3).

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BuildInfo {
    pub version: &'static str,
    /// Empty (and left out of the JSON) unless the commit is really tagged.
    #[serde(skip_serializing_if = "is_empty")]
    pub git_tag: &'static str,
    pub git_rev: &'static str,
    pub build_time: &'static str,
}

pub const BUILD: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    git_tag: env!("XAGENT_GIT_TAG"),
    git_rev: env!("XAGENT_GIT_REV"),
    build_time: env!("XAGENT_BUILD_TIME"),
};

fn is_empty(s: &&str) -> bool {
    s.is_empty()
}

/// `--version` text, one line: version, git rev, the tag when the commit is tagged, build time as RFC 3339 UTC
/// (the card's `build_time` keeps the protocol's `YYMMDDhhmm`).
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("XAGENT_VERSION_DETAIL"),
    ", protocol 3.0, profile xagent.device.v1)"
);

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm). Shared by every
/// place that prints a UTC date without a date crate (`audit tail`, the simulated phone's logcat); `build.rs` keeps
/// its own copy because a build script cannot use the crate.
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
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
