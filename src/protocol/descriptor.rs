//! Connection Descriptor (protocol §9): the per-channel runtime projection that xAgent turns into tool
//! availability. Built by `channels::Hub::descriptor`; validated here against the card (cross-rules of §9).

use serde::Serialize;

use super::card::Card;
use super::consts::{CONNECTOR_CARD_ID, DESCRIPTOR_SCHEMA, TARGET_TYPES};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Descriptor {
    pub schema: &'static str,
    pub connection: Connection,
    pub target: DescTarget,
    pub tools: Vec<ToolStatus>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Connection {
    pub connector_card_id: &'static str,
    pub connector_id: String,
    pub connector_channel_id: String,
    pub target_type: &'static str,
    pub profiles: Vec<String>,
    pub status: ConnStatus,
}

/// `connection.status` (§9).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ConnStatus {
    Created,
    Authenticating,
    Connected,
    Degraded,
    Offline,
    Expired,
    Revoked,
    Error,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DescTarget {
    pub provider: &'static str,
    pub label: &'static str,
    /// Display-level only (§9: "target 只能包含展示级账号信息和脱敏提示").
    pub display_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub account_hint: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolStatus {
    pub tool_id: String,
    pub status: ToolAvail,
    pub target_permission_state: Permission,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolAvail {
    Available,
    Unavailable,
    DeniedByTarget,
    RequiresReauth,
    NotSupported,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    Unknown,
    Granted,
    Denied,
    RequiresReauth,
}

/// The hard rules of §9 that need the card and the channel. Empty means valid.
pub fn validate(d: &Descriptor, card: &Card, channel_id: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if d.schema != DESCRIPTOR_SCHEMA {
        errs.push("schema must be xagent.connection/v2".into());
    }
    if d.connection.connector_card_id != CONNECTOR_CARD_ID || d.connection.connector_card_id != card.connector_card_id {
        errs.push("connection.connector_card_id must equal the card id".into());
    }
    if d.connection.connector_id.is_empty() {
        errs.push("connection.connector_id is required".into());
    }
    if d.connection.connector_channel_id != channel_id {
        errs.push("connection.connector_channel_id must equal the channel".into());
    }
    if !TARGET_TYPES.contains(&d.connection.target_type) {
        errs.push("connection.target_type is not a supported type".into());
    }
    if d.connection.profiles.is_empty() {
        errs.push("connection.profiles must not be empty".into());
    }
    let mut seen = std::collections::HashSet::new();
    for p in &d.connection.profiles {
        if !seen.insert(p) {
            errs.push(format!("connection.profiles repeats {p}"));
        }
        if !card.supports.profiles.contains(&p.as_str()) {
            errs.push(format!("connection.profiles has {p}, which the card does not declare"));
        }
    }
    if d.target.provider.is_empty() {
        errs.push("target.provider is required".into());
    }
    for t in &d.tools {
        if !card.tools.iter().any(|c| c.tool_id == t.tool_id) {
            errs.push(format!("tool {} is not in the card", t.tool_id));
        }
    }
    errs
}
