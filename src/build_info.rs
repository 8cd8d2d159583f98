//! Build facts injected at compile time by `build.rs`; the card and `/health` report the same values (§4.3).

use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BuildInfo {
    pub version: &'static str,
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

/// `--version` text: version, git rev and build time, one line.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (git ",
    env!("XAGENT_GIT_REV"),
    ", built ",
    env!("XAGENT_BUILD_TIME"),
    " UTC, protocol 3.0, profile xagent.device.v1)"
);
