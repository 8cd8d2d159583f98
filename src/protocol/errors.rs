//! Stable, machine-readable error codes (protocol §7, §8.23) plus the device codes the profile asks for
//! ("distinct stable error codes for device offline, command timeout and permission denied").

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorCode {
    // §8.23
    InvalidPacket,
    HelloRequired,
    ConnectorCardIdMismatch,
    ConnectorIdMismatch,
    ChannelNotOpen,
    ConnectorChannelIdRequired,
    ConnectorChannelNotOwned,
    ConnectorChannelConnectorMismatch,
    ConnectorChannelUnavailable,
    ConnectionNotFound,
    ConnectionNotAuthenticated,
    AuthSessionNotFound,
    ToolInvokeFailed,
    UnsupportedPacket,
    // Ours: documented in device-profile/errors-and-limits.md.
    /// hello `protocol_version` missing or below 3.0 (§8.1: the connector must refuse it).
    ProtocolVersionUnsupported,
    /// hello shares no profile with the card: no channel could have a non-empty `profiles`.
    ProfileNotSupported,
    /// A tool id that is not in the card.
    ToolNotFound,
    /// Tool arguments do not match the tool's `input_schema`.
    InvalidArguments,
    /// `auth.start` names a flow that is not in the card, or its input is invalid.
    AuthFlowNotFound,
    AuthInputInvalid,
    /// No device satisfies the binding request.
    DeviceNotFound,
    DeviceBusy,
    DeviceOffline,
    DeviceUnauthorized,
    DeviceTimeout,
    PermissionDenied,
    /// The phone sent a screen capture that contradicts itself (header offsets, lengths or sizes that overflow or
    /// do not match the bytes received, or a PNG larger than any screen). Never a panic: one lying phone must not
    /// take the connector, and every other phone, down.
    BadFrame,
    /// Text the device cannot type (non-ASCII without the ADB Keyboard IME).
    UnsupportedText,
    /// A multi-touch gesture (`android_pinch`, `android_gesture`) on a phone whose helper cannot inject it: `input`
    /// has no multi-touch, and a one-finger swipe in its place would do something else.
    UnsupportedGesture,
    /// `android_ui_wait` saw no matching element within its timeout.
    UiWaitTimeout,
    /// An element from an observation is no longer on screen and could not be re-resolved by its identity.
    StaleElement,
    /// An element selector matched more than one element (and gave no `nth`).
    AmbiguousElement,
    /// No element matches the selector (or `android_scroll` did not find it within `max_swipes`).
    ElementNotFound,
    /// An `observation_id` that is unknown, expired, from another channel or another device.
    ObservationExpired,
    /// The phone is not ready for input: the keyguard is showing (or the screen is off and `auto_wake` is off).
    DeviceLocked,
    /// The keyguard needs a PIN, pattern or password, which the connector never has.
    SecureLock,
    /// The UI tree cannot be read now (`uiautomator` never saw the screen idle: video, animation).
    UiUnavailable,
    /// An operator has taken the bound phone over from the device wall: the agent's calls touch nothing until it
    /// is returned (or the takeover's idle timeout ends it).
    OperatorControl,
    /// `android_request_human`: no operator answered the request within its timeout (or the call's deadline).
    HumanUnavailable,
    /// Too many tool calls running on one channel.
    RateLimited,
    /// The server is shutting down and takes no new work.
    ShuttingDown,
    /// An internal fault (store, I/O); never carries secrets.
    Internal,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidPacket => "invalid_packet",
            Self::HelloRequired => "hello_required",
            Self::ConnectorCardIdMismatch => "connector_card_id_mismatch",
            Self::ConnectorIdMismatch => "connector_id_mismatch",
            Self::ChannelNotOpen => "channel_not_open",
            Self::ConnectorChannelIdRequired => "connector_channel_id_required",
            Self::ConnectorChannelNotOwned => "connector_channel_not_owned",
            Self::ConnectorChannelConnectorMismatch => "connector_channel_connector_mismatch",
            Self::ConnectorChannelUnavailable => "connector_channel_unavailable",
            Self::ConnectionNotFound => "connection_not_found",
            Self::ConnectionNotAuthenticated => "connection_not_authenticated",
            Self::AuthSessionNotFound => "auth_session_not_found",
            Self::ToolInvokeFailed => "tool_invoke_failed",
            Self::UnsupportedPacket => "unsupported_packet",
            Self::ProtocolVersionUnsupported => "protocol_version_unsupported",
            Self::ProfileNotSupported => "profile_not_supported",
            Self::ToolNotFound => "tool_not_found",
            Self::InvalidArguments => "invalid_arguments",
            Self::AuthFlowNotFound => "auth_flow_not_found",
            Self::AuthInputInvalid => "auth_input_invalid",
            Self::DeviceNotFound => "device_not_found",
            Self::DeviceBusy => "device_busy",
            Self::DeviceOffline => "device_offline",
            Self::DeviceUnauthorized => "device_unauthorized",
            Self::DeviceTimeout => "device_timeout",
            Self::PermissionDenied => "permission_denied",
            Self::BadFrame => "bad_frame",
            Self::UnsupportedText => "unsupported_text",
            Self::UnsupportedGesture => "unsupported_gesture",
            Self::UiWaitTimeout => "ui_wait_timeout",
            Self::StaleElement => "stale_element",
            Self::AmbiguousElement => "ambiguous_element",
            Self::ElementNotFound => "element_not_found",
            Self::ObservationExpired => "observation_expired",
            Self::DeviceLocked => "device_locked",
            Self::SecureLock => "secure_lock",
            Self::UiUnavailable => "ui_unavailable",
            Self::OperatorControl => "operator_control",
            Self::HumanUnavailable => "human_unavailable",
            Self::RateLimited => "rate_limited",
            Self::ShuttingDown => "shutting_down",
            Self::Internal => "internal_error",
        }
    }
}

impl ErrorCode {
    /// Every code, for reverse lookup.
    pub const ALL: &'static [ErrorCode] = &[
        Self::InvalidPacket,
        Self::HelloRequired,
        Self::ConnectorCardIdMismatch,
        Self::ConnectorIdMismatch,
        Self::ChannelNotOpen,
        Self::ConnectorChannelIdRequired,
        Self::ConnectorChannelNotOwned,
        Self::ConnectorChannelConnectorMismatch,
        Self::ConnectorChannelUnavailable,
        Self::ConnectionNotFound,
        Self::ConnectionNotAuthenticated,
        Self::AuthSessionNotFound,
        Self::ToolInvokeFailed,
        Self::UnsupportedPacket,
        Self::ProtocolVersionUnsupported,
        Self::ProfileNotSupported,
        Self::ToolNotFound,
        Self::InvalidArguments,
        Self::AuthFlowNotFound,
        Self::AuthInputInvalid,
        Self::DeviceNotFound,
        Self::DeviceBusy,
        Self::DeviceOffline,
        Self::DeviceUnauthorized,
        Self::DeviceTimeout,
        Self::PermissionDenied,
        Self::BadFrame,
        Self::UnsupportedText,
        Self::UnsupportedGesture,
        Self::UiWaitTimeout,
        Self::StaleElement,
        Self::AmbiguousElement,
        Self::ElementNotFound,
        Self::ObservationExpired,
        Self::DeviceLocked,
        Self::SecureLock,
        Self::UiUnavailable,
        Self::OperatorControl,
        Self::HumanUnavailable,
        Self::RateLimited,
        Self::ShuttingDown,
        Self::Internal,
    ];

    /// The code with this wire name; unknown names become `tool_invoke_failed`.
    pub fn from_wire(name: &str) -> ErrorCode {
        Self::ALL.iter().copied().find(|c| c.as_str() == name).unwrap_or(Self::ToolInvokeFailed)
    }
}

/// A protocol or business error: a stable code plus a message for logs and developers (never secrets).
///
/// `details` is optional machine-readable data an agent can act on without parsing the message (the candidates of
/// an ambiguous selector and the `observation_id` their indices belong to, what was on screen when a wait timed
/// out). It goes out as `error.details`: the packet schema's error object is `{code, message}` without
/// `additionalProperties: false`, so receivers that do not know it ignore it; everything in it is also said in
/// `message`, which stays the contract. Never secrets, bounded by whoever builds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtoError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<serde_json::Value>,
}

impl ProtoError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), details: None }
    }

    /// The same error with `details` (an object).
    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }
}

impl std::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for ProtoError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_are_snake_case() {
        for c in [ErrorCode::InvalidPacket, ErrorCode::ConnectorChannelConnectorMismatch, ErrorCode::DeviceTimeout] {
            assert!(c.as_str().chars().all(|ch| ch.is_ascii_lowercase() || ch == '_'), "{c:?}");
        }
        assert_eq!(ErrorCode::ConnectorChannelConnectorMismatch.as_str(), "connector_channel_connector_mismatch");
        for &c in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_wire(c.as_str()), c, "round trip of {c:?}");
        }
        assert_eq!(ErrorCode::from_wire("nope"), ErrorCode::ToolInvokeFailed);
    }
}
