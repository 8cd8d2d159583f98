//! The protocol's fixed names (schemas, subprotocol, version, our card id and profile, target types) and how two
//! versions compare: the bottom of the room, which every wire type names and nothing here imports.

/// `schema` of the Connector Card (protocol §1).
pub const CARD_SCHEMA: &str = "xagent.connector/v1";
/// `schema` of a Connection Descriptor (protocol §1, §9).
pub const DESCRIPTOR_SCHEMA: &str = "xagent.connection/v2";
/// `schema` of every data-plane packet (protocol §7).
pub const PACKET_SCHEMA: &str = "xagent.connector.packet/v1";
/// WebSocket subprotocol of the data plane (protocol §6).
pub const SUBPROTOCOL: &str = "xagent.connector.packet.v1";
/// The public protocol version this connector implements.
pub const PROTOCOL_VERSION: &str = "3.0";
/// Our fixed Connector Card id: fixed by the developer, never per deployment (§4.1).
pub const CONNECTOR_CARD_ID: &str = "device.adb";
/// The device profile we implement.
pub const DEVICE_PROFILE: &str = "xagent.device.v1";
/// Main skill name: `connector-<card id>` with `.`/`_` normalised to `-` (§4.2).
pub const SKILL_NAME: &str = "connector-device-adb";
/// The target type and provider of everything this connector binds.
pub const TARGET_TYPE: &str = "device";
pub const PROVIDER: &str = "adb";
/// English (issue 50): the protocol's catalog has no language field and calls the label display text.
pub const TARGET_LABEL: &str = "Android device";

/// Standard profiles and the card target types each one may be declared with (§4.1: a declared profile must
/// intersect `supports.target_types`; `xagent.im.v2` is only for `im`).
pub const PROFILE_TARGET_TYPES: &[(&str, &[&str])] =
    &[("xagent.im.v1", &["im"]), ("xagent.im.v2", &["im"]), ("xagent.device.v1", &["device"])];

/// Target types the protocol currently knows (§4.1, §9).
pub const TARGET_TYPES: &[&str] = &["im", "email", "calendar", "ticket", "device"];

/// Compares dotted protocol versions numerically ("3.0" < "3.1" < "10.0"). `None` when either is not a version.
pub fn compare_versions(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    fn parts(v: &str) -> Option<Vec<u64>> {
        let v = v.trim();
        if v.is_empty() {
            return None;
        }
        v.split('.').map(|p| p.parse::<u64>().ok()).collect()
    }
    let (mut a, mut b) = (parts(a)?, parts(b)?);
    let n = a.len().max(b.len());
    a.resize(n, 0);
    b.resize(n, 0);
    Some(a.cmp(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering::*;

    #[test]
    fn versions_compare_numerically_not_lexically() {
        assert_eq!(compare_versions("3.0", "3.0"), Some(Equal));
        assert_eq!(compare_versions("3", "3.0"), Some(Equal));
        assert_eq!(compare_versions("2.9", "3.0"), Some(Less));
        assert_eq!(compare_versions("10.0", "3.0"), Some(Greater));
        assert_eq!(compare_versions("3.1", "3.0"), Some(Greater));
        assert_eq!(compare_versions("", "3.0"), None);
        assert_eq!(compare_versions("three", "3.0"), None);
    }
}
