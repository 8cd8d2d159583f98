//! Encoders of the pictures agents and operators are shown: JPEG (`jpeg-encoder`) and PNG (`image`).

use image::codecs::png::{CompressionType, FilterType as PngFilter, PngEncoder};
use image::{ImageEncoder, RgbImage};

use super::frame::Frame;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// Output encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Jpeg { quality: u8 },
    Png,
}

/// Scales a captured frame so its long side is at most `max_side` (0 = keep), straight from its bytes
/// ([`Frame::fit`]), and encodes it. CPU-bound: call it on a blocking thread.
pub fn render(frame: &Frame, max_side: u32, format: Format) -> Result<(Vec<u8>, u32, u32), ProtoError> {
    encode(&frame.fit(max_side), format)
}

/// JPEG through `jpeg-encoder`: 2–3× faster than `image`'s encoder on screenshots (AVX2 where the CPU has it,
/// portable code elsewhere, pure Rust so the static ARM builds need nothing more) and smaller files at the same
/// quality. Chroma is box-averaged (like libjpeg), not point-sampled, so thin coloured lines — the observe marks,
/// UI accents — keep their colour.
fn encode_jpeg(img: &RgbImage, quality: u8, out: &mut Vec<u8>) -> Result<(), String> {
    let (w, h) = img.dimensions();
    let (Ok(w16), Ok(h16)) = (u16::try_from(w), u16::try_from(h)) else {
        return Err(format!("{w}×{h} is larger than JPEG allows (65535 px a side)"));
    };
    let mut enc = jpeg_encoder::Encoder::new(out, quality.clamp(1, 100));
    enc.set_chroma_subsampling_method(jpeg_encoder::ChromaSubsamplingMethod::Average);
    enc.encode(img.as_raw(), w16, h16, jpeg_encoder::ColorType::Rgb).map_err(|e| e.to_string())
}

/// Encodes an image as it is. CPU-bound: call it on a blocking thread.
pub fn encode(img: &RgbImage, format: Format) -> Result<(Vec<u8>, u32, u32), ProtoError> {
    let (w, h) = img.dimensions();
    let mut out = Vec::new();
    let r = match format {
        Format::Jpeg { quality } => encode_jpeg(img, quality, &mut out),
        Format::Png => PngEncoder::new_with_quality(&mut out, CompressionType::Fast, PngFilter::Adaptive)
            .write_image(img.as_raw(), w, h, image::ExtendedColorType::Rgb8)
            .map_err(|e| e.to_string()),
    };
    r.map_err(|e| ProtoError::new(ErrorCode::Internal, format!("encoding the screenshot failed: {e}")))?;
    Ok((out, w, h))
}
