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
