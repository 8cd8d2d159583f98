//! Opaque identifiers. They are random (not counters) so that nothing about one id predicts another; none of them
//! is an authorisation credential (protocol §3), except file download tokens which carry ≥128 bits.

/// `n` random bytes as lowercase hex.
pub fn random_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    getrandom::fill(&mut buf).expect("the OS random source is unavailable");
    let mut s = String::with_capacity(n * 2);
    for b in buf {
        s.push_str(&format!("{b:02x}"));
    }
    s
}

pub fn packet_id() -> String {
    format!("pkt_{}", random_hex(12))
}

pub fn connector_id() -> String {
    format!("conn_device_adb_{}", random_hex(12))
}

/// Prefix of every channel id this connector issues; an id without it was not issued by this card.
pub const CHANNEL_PREFIX: &str = "cch_adb_";

pub fn channel_id() -> String {
    format!("{CHANNEL_PREFIX}{}", random_hex(12))
}

pub fn auth_session_id() -> String {
    format!("auth_{}", random_hex(12))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_prefixed_and_distinct() {
        let a = channel_id();
        let b = channel_id();
        assert!(a.starts_with(CHANNEL_PREFIX) && a.len() == CHANNEL_PREFIX.len() + 24);
        assert_ne!(a, b);
        assert!(packet_id().starts_with("pkt_"));
        assert!(connector_id().starts_with("conn_device_adb_"));
    }
}
