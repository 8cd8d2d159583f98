//! The `agent-cost` bench's estimators (issue 49 item 9, `benches/e2e/cost_model.rs`): text tokens, the two image
//! formulas, picture sizes read from real JPEG/PNG headers, and what one MCP tool result is counted as. No timing.
use serde_json::json;

#[allow(dead_code)]
#[path = "../benches/e2e/cost_model.rs"]
mod cost_model;

use cost_model::*;

fn jpeg(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(w, h, image::Rgb([200, 10, 10]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Jpeg).unwrap();
    out.into_inner()
}

fn png(w: u32, h: u32) -> Vec<u8> {
    let img = image::RgbImage::from_pixel(w, h, image::Rgb([0, 0, 0]));
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

#[test]
fn text_is_a_token_per_four_bytes_rounded_up() {
    assert_eq!(text_tokens(0), 0);
    assert_eq!(text_tokens(1), 1);
    assert_eq!(text_tokens(4), 1);
    assert_eq!(text_tokens(5), 2);
    assert_eq!(text_tokens(1169), 293);
}

#[test]
fn image_formulas_match_the_published_examples() {
    // Anthropic's table: 1092×1092 ≈ 1590 tokens, 200×200 ≈ 54; larger pictures are scaled to ≤ 1568 px first.
    assert_eq!(image_tokens_anthropic(1092, 1092), 1590);
    assert_eq!(image_tokens_anthropic(200, 200), 54);
    assert_eq!(image_tokens_anthropic(1080, 2400), 1474, "a full phone frame is scaled to 705×1568 first");
    assert_eq!(image_tokens_anthropic(2000, 2000), 1600, "at most ~1,600 tokens");
    // OpenAI's example: 1024×1024 high detail → 768×768 → 4 tiles → 765; 2048×4096 → 768×1536 → 6 tiles → 1105.
    assert_eq!(image_tokens_openai(1024, 1024), 765);
    assert_eq!(image_tokens_openai(2048, 4096), 1105);
    // A phone picture at the old default and at the peer's.
    assert_eq!(image_tokens_openai(576, 1280), 85 + 170 * 6);
    assert_eq!(image_tokens_openai(461, 1024), 85 + 170 * 2);
    assert_eq!(image_tokens_anthropic(461, 1024), 630);
    assert_eq!((image_tokens_anthropic(0, 10), image_tokens_openai(10, 0)), (0, 0));
}

#[test]
fn picture_sizes_come_from_real_headers() {
    assert_eq!(image_size(&jpeg(461, 1024)), Some((461, 1024)));
    assert_eq!(image_size(&jpeg(32, 15)), Some((32, 15)));
    assert_eq!(image_size(&png(576, 1280)), Some((576, 1280)));
    assert_eq!(image_size(b"GIF89a......................"), None);
    assert_eq!(image_size(&[0xff, 0xd8, 0xff]), None, "a truncated JPEG has no size");
}

#[test]
fn a_tool_result_costs_its_text_and_images_and_structured_content_apart() {
    let pic = jpeg(100, 200);
    let data = xagent_adb_connector::base64::encode(&pic);
    let answer = json!({"jsonrpc": "2.0", "id": 3, "result": {
        "content": [
            {"type": "text", "text": "#1 Button \"Increment\""},
            {"type": "image", "data": data, "mimeType": "image/jpeg"},
            {"type": "resource_link", "uri": "http://x/files/refs/1", "name": "shot"}
        ],
        "structuredContent": {"elements": [1, 2, 3]}
    }});
    let (c, text) = measure(&answer, xagent_adb_connector::base64::decode);
    let link = answer["result"]["content"][2].to_string().len() as u64;
    assert_eq!(c.calls, 1);
    assert_eq!(c.text_bytes, "#1 Button \"Increment\"".len() as u64 + link);
    assert_eq!((c.images, c.image_bytes, c.image_px.clone()), (1, data.len() as u64, vec![(100, 200)]));
    assert_eq!(c.image_tokens_anthropic, image_tokens_anthropic(100, 200));
    assert_eq!(c.image_tokens_openai, 85 + 170);
    assert_eq!(c.text_tokens, text_tokens(c.text_bytes as usize));
    assert_eq!(c.bytes(), c.text_bytes + c.image_bytes);
    assert_eq!(c.structured_bytes, r#"{"elements":[1,2,3]}"#.len() as u64);
    assert_eq!(c.tokens_anthropic(), c.text_tokens + c.image_tokens_anthropic);
    assert!(text.contains("Increment") && text.contains("files/refs/1"));
    assert_eq!(c.errors, 0);

    // A JSON-RPC error and an isError result are counted as errors, their words as text.
    let (e, t) = measure(&json!({"error": {"code": -32602, "message": "unknown tool"}}), |_| None);
    assert_eq!((e.errors, e.text_bytes, t.as_str()), (1, 12, "unknown tool"));
    let failed = json!({"result": {"isError": true, "content": [{"type": "text", "text": "element_not_found"}]}});
    assert_eq!(measure(&failed, |_| None).0.errors, 1);

    // Sums add every figure.
    let mut sum = Cost::default();
    sum.add(&c);
    sum.add(&e);
    assert_eq!((sum.calls, sum.errors, sum.text_bytes), (2, 1, c.text_bytes + 12));
}
