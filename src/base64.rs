//! Standard base64 (RFC 4648 §4), encode and decode: the one copy the connector uses (HTTP Basic credentials of
//! the webhook, MCP image content, the wall page's script hash, the ADB Keyboard's broadcast, the phone helper's
//! replies). Twenty lines each instead of a crate; imports nothing of ours, so any module may use it.

/// Standard base64 with padding.
pub fn encode(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard base64 (padding optional) back to bytes; `None` on any other character or a dangling bit group.
pub fn decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let body = s.trim_end_matches('=');
    if s.len() - body.len() > 2 || body.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(body.len() / 4 * 3 + 2);
    let (mut acc, mut bits) = (0u32, 0);
    for &c in body.as_bytes() {
        acc = ((acc << 6) | u32::from(val(c)?)) & 0xFF_FFFF;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4648 §10's test vectors, both ways.
    const VECTORS: [(&str, &str); 7] = [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ];

    #[test]
    fn encode_matches_rfc4648_vectors() {
        for (plain, enc) in VECTORS {
            assert_eq!(encode(plain.as_bytes()), enc);
        }
        assert_eq!(encode("你好".as_bytes()), "5L2g5aW9");
        assert_eq!(encode(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn decode_matches_rfc4648_vectors() {
        for (plain, enc) in VECTORS {
            assert_eq!(decode(enc).as_deref(), Some(plain.as_bytes()));
        }
        assert_eq!(decode("+/8=").as_deref(), Some(&[0xfb, 0xff][..]));
    }

    #[test]
    fn round_trips_and_refuses_what_is_not_base64() {
        for t in ["", "a", "ab", "abc", "Hello, 世界 ✓"] {
            assert_eq!(decode(&encode(t.as_bytes())).as_deref(), Some(t.as_bytes()));
        }
        assert_eq!(decode("YQ").as_deref(), Some(&b"a"[..]));
        assert!(decode("Y").is_none() && decode("a*b=").is_none() && decode("YQ===").is_none());
    }
}
