//! What a model is charged for one MCP tool result (issue 49 item 9): the estimators of the `agent-cost` scenario,
//! kept free of I/O so `tests/agent_cost_model.rs` includes this file and checks them.
//!
//! - **Text**: the UTF-8 bytes of every `text` content item (a `resource_link` counts as its JSON text), estimated
//!   as `ceil(bytes / 4)` tokens — the common tokenizer-free rule of thumb; the same estimator on every side, so
//!   ratios do not depend on it. `structuredContent` is counted apart (a host that passes it to the model pays it
//!   too; the figures say so where it matters).
//! - **Images**: bytes as sent (the base64 text of the image content), and tokens by two published formulas from
//!   the picture's own width × height (read from its JPEG/PNG header):
//!   - Anthropic (Claude vision docs): the image is first scaled to fit a 1568 px long edge, and at most ~1,600 tokens
//!     (~1.2 megapixels),
//!     then `ceil(width × height / 750)`;
//!   - OpenAI (GPT-4o/4.1 `detail: high`): fit in 2048 × 2048, then scaled down so the short side is ≤ 768, then
//!     `85 + 170 × tiles` with 512 px tiles.
//!
//! Only `serde_json`: the bench and the test both compile this file.

use serde_json::Value;

/// Tokens of `bytes` bytes of text: `ceil(bytes / 4)`.
pub fn text_tokens(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

/// Anthropic's estimate for a `w`×`h` picture: scaled (aspect kept) to a long edge ≤ 1568 px, at most 1,600 tokens.
pub fn image_tokens_anthropic(w: u32, h: u32) -> u64 {
    if w == 0 || h == 0 {
        return 0;
    }
    let (mut w, mut h) = (w as f64, h as f64);
    let long = w.max(h);
    if long > 1568.0 {
        let s = 1568.0 / long;
        (w, h) = ((w * s).floor(), (h * s).floor());
    }
    // Past ~1,600 tokens (1.2 MP) the picture is scaled down to that.
    ((w * h / 750.0).ceil() as u64).min(1600)
}

/// OpenAI's `detail: high` estimate: fit in 2048², short side scaled down to ≤ 768, `85 + 170 × 512-px tiles`.
pub fn image_tokens_openai(w: u32, h: u32) -> u64 {
    if w == 0 || h == 0 {
        return 0;
    }
    let (mut w, mut h) = (w as f64, h as f64);
    let long = w.max(h);
    if long > 2048.0 {
        let s = 2048.0 / long;
        (w, h) = (w * s, h * s);
    }
    let short = w.min(h);
    if short > 768.0 {
        let s = 768.0 / short;
        (w, h) = (w * s, h * s);
    }
    let tiles = (w / 512.0).ceil() * (h / 512.0).ceil();
    85 + 170 * tiles as u64
}

/// Width and height from a JPEG (the SOFn marker) or PNG (IHDR) file's header; None for anything else.
pub fn image_size(b: &[u8]) -> Option<(u32, u32)> {
    if b.len() >= 24 && b.starts_with(b"\x89PNG\r\n\x1a\n") && &b[12..16] == b"IHDR" {
        let be = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        return Some((be(16), be(20)));
    }
    if !b.starts_with(&[0xff, 0xd8]) {
        return None;
    }
    let mut i = 2;
    while i + 9 < b.len() {
        if b[i] != 0xff {
            i += 1;
            continue;
        }
        let marker = b[i + 1];
        if marker == 0xff {
            i += 1;
            continue;
        }
        if marker == 0xd8 || marker == 0x01 || (0xd0..=0xd7).contains(&marker) {
            i += 2;
            continue;
        }
        let len = u16::from_be_bytes([b[i + 2], b[i + 3]]) as usize;
        // SOF0..SOF15 but DHT (c4), JPG (c8) and DAC (cc).
        if (0xc0..=0xcf).contains(&marker) && ![0xc4, 0xc8, 0xcc].contains(&marker) {
            let h = u16::from_be_bytes([b[i + 5], b[i + 6]]) as u32;
            let w = u16::from_be_bytes([b[i + 7], b[i + 8]]) as u32;
            return Some((w, h));
        }
        i += 2 + len;
    }
    None
}

/// What one tool result costs a model (or the sum over calls).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cost {
    pub calls: u32,
    /// UTF-8 bytes of the text content items (and resource links).
    pub text_bytes: u64,
    /// Images in the content, their base64 bytes as sent, and their pixel sizes.
    pub images: u32,
    pub image_bytes: u64,
    pub image_px: Vec<(u32, u32)>,
    pub text_tokens: u64,
    pub image_tokens_anthropic: u64,
    pub image_tokens_openai: u64,
    /// `structuredContent`'s JSON bytes (not in the totals: a host that passes it pays it on top).
    pub structured_bytes: u64,
    /// Calls answered with an error (`isError` or a JSON-RPC error).
    pub errors: u32,
    pub ms: f64,
}

impl Cost {
    /// Bytes a model reads: text plus images as sent.
    pub fn bytes(&self) -> u64 {
        self.text_bytes + self.image_bytes
    }

    /// Tokens with images by Anthropic's formula (the headline figure) and by OpenAI's.
    pub fn tokens_anthropic(&self) -> u64 {
        self.text_tokens + self.image_tokens_anthropic
    }

    pub fn tokens_openai(&self) -> u64 {
        self.text_tokens + self.image_tokens_openai
    }

    pub fn add(&mut self, o: &Cost) {
        self.calls += o.calls;
        self.text_bytes += o.text_bytes;
        self.images += o.images;
        self.image_bytes += o.image_bytes;
        self.image_px.extend_from_slice(&o.image_px);
        self.text_tokens += o.text_tokens;
        self.image_tokens_anthropic += o.image_tokens_anthropic;
        self.image_tokens_openai += o.image_tokens_openai;
        self.structured_bytes += o.structured_bytes;
        self.errors += o.errors;
        self.ms += o.ms;
    }
}

/// The cost of one JSON-RPC answer to `tools/call` (`{"result": …}` or `{"error": …}`), and the text a model reads
/// of it (for the scripted agent's decisions). `decode` turns base64 into bytes (the crate's decoder in the bench).
pub fn measure(answer: &Value, decode: impl Fn(&str) -> Option<Vec<u8>>) -> (Cost, String) {
    let mut c = Cost { calls: 1, ..Cost::default() };
    let mut text = String::new();
    if let Some(e) = answer.get("error") {
        let t = e["message"].as_str().unwrap_or_default().to_owned();
        c.text_bytes = t.len() as u64;
        c.errors = 1;
        text = t;
    }
    let r = &answer["result"];
    if r["isError"] == true {
        c.errors = 1;
    }
    for item in r["content"].as_array().into_iter().flatten() {
        match item["type"].as_str() {
            Some("text") => {
                let t = item["text"].as_str().unwrap_or_default();
                c.text_bytes += t.len() as u64;
                text.push_str(t);
                text.push('\n');
            }
            Some("image") => {
                let data = item["data"].as_str().unwrap_or_default();
                c.images += 1;
                c.image_bytes += data.len() as u64;
                if let Some((w, h)) = decode(data).as_deref().and_then(image_size) {
                    c.image_px.push((w, h));
                    c.image_tokens_anthropic += image_tokens_anthropic(w, h);
                    c.image_tokens_openai += image_tokens_openai(w, h);
                }
            }
            _ => {
                let t = item.to_string();
                c.text_bytes += t.len() as u64;
                text.push_str(&t);
                text.push('\n');
            }
        }
    }
    if let Some(s) = r.get("structuredContent").filter(|s| !s.is_null()) {
        c.structured_bytes = s.to_string().len() as u64;
    }
    c.text_tokens = text_tokens(c.text_bytes as usize);
    (c, text)
}
