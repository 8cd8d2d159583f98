//! The book of operator holds (`takeover.rs` is how the hub uses it): who holds which phone since when, until
//! which idle deadline, and the refusals an agent's call meets meanwhile. Apart from the hub's `impl`s so that the
//! hub can own it without a circle.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::device::DeviceKey;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Who holds a phone. A session id is a secret: compared, never shown or logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Operator {
    /// The system API key (an integration): every Bearer caller is this one operator.
    ApiKey,
    /// A wall login session: its id and the operator's name (from the users file, the trusted proxy, or
    /// `api-key` for a login with the system key).
    Session(String, String),
}

impl Operator {
    /// The operator's name, as audit records, logs and the wall show it: never a session id (a bearer secret).
    pub fn name(&self) -> &str {
        match self {
            Operator::ApiKey => "api-key",
            Operator::Session(_, name) => name,
        }
    }

    /// How the operator came in (`api_key`, `session`): what the agent's answered request for a person says.
    pub fn kind(&self) -> &'static str {
        match self {
            Operator::ApiKey => "api_key",
            Operator::Session(..) => "session",
        }
    }
}

#[derive(Clone, Debug)]
pub(super) struct Hold {
    pub(super) by: Operator,
    pub(super) since_ms: u64,
    pub(super) last_used: Instant,
    /// `last_used` on the wall clock, for [`TakeoverInfo::expires_ms`].
    pub(super) last_used_ms: u64,
    pub(super) idle: Duration,
}

/// A takeover as the wall shows it.
#[derive(Clone, Debug)]
pub struct TakeoverInfo {
    pub by: Operator,
    pub since_ms: u64,
    /// When the idle timeout ends it unless the operator acts before (wall clock, ms): changes only with input, so
    /// the wall's event stream does not resend the document every second of a takeover.
    pub expires_ms: u64,
}

#[derive(Default)]
pub struct Takeovers(
    pub(super) std::sync::Mutex<HashMap<DeviceKey, Hold>>,
    pub(super) std::sync::Mutex<HashMap<DeviceKey, CancellationToken>>,
);

/// The audit "channel" of operator actions: they come from the wall, not from a protocol channel.
pub const OPERATOR_CHANNEL: &str = "wall";

pub(super) fn control_error() -> ProtoError {
    ProtoError::new(
        ErrorCode::OperatorControl,
        "an operator is using this phone from the device wall; nothing ran. Retry later or bind another phone",
    )
}

/// The gate's refusal while `h` holds the phone: until when at the latest if the operator stops acting (the idle
/// deadline, moved on by each operator input), and that reading works meanwhile (issue 35 item 5).
pub(super) fn held_until(h: &Hold) -> ProtoError {
    let until_ms = h.last_used_ms.saturating_add(h.idle.as_millis() as u64);
    let until = crate::protocol::utc(until_ms);
    ProtoError::new(
        ErrorCode::OperatorControl,
        format!(
            "an operator is using this phone from the device wall; nothing ran. The hold ends at {until} unless the \
             operator acts again (each input moves it on by {} s) or returns the phone sooner. Read-only tools \
             (android_observe, android_ui_dump, android_screenshot, …) work meanwhile; retry inputs after it, or \
             bind another phone",
            h.idle.as_secs()
        ),
    )
    .with_details(json!({"held_until": until, "held_until_ms": until_ms}))
}
