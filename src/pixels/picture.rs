//! A captured screen as the capture paths hand it over: the whole frame, or the picture already fitted while it
//! arrived, and what crossing adb cost.

use image::RgbImage;

use super::downscale::{fit, fit_size};
use super::fitting::Fitted;
use super::frame::Frame;

/// A captured screen: the whole frame as the phone sent it (converted and scaled only when the output is made:
/// [`Frame::fit`]), or already downscaled as it arrived ([`super::fitting`]: a parallel or framebuffer capture asked
/// for a picture smaller than the frame).
pub enum Picture {
    Whole(Frame),
    Fitted(Fitted),
}

impl Picture {
    /// The frame's own size (the screen in its current orientation).
    pub fn dimensions(&self) -> (u32, u32) {
        match self {
            Picture::Whole(f) => f.dimensions(),
            Picture::Fitted(f) => (f.width, f.height),
        }
    }

    /// See [`Frame::uniform_colour`] (a fitted picture's answer was found on the full frame's pixels as they
    /// arrived).
    pub fn uniform_colour(&self) -> Option<[u8; 3]> {
        match self {
            Picture::Whole(f) => f.uniform_colour(),
            Picture::Fitted(f) => f.uniform,
        }
    }

    /// The RGB picture with its long side at most `max_side` (0 = keep): [`Frame::fit`], or the fitted picture
    /// (made for the same `max_side` the capture was asked for).
    pub fn fit(self, max_side: u32) -> RgbImage {
        match self {
            Picture::Whole(f) => f.fit(max_side),
            Picture::Fitted(f) => {
                let (w, h) = f.img.dimensions();
                if fit_size(f.width, f.height, max_side) == Some((w, h)) {
                    f.img
                } else {
                    // Not asked for this size: the nearest honest answer, never a wrong-sized one.
                    fit(f.img, max_side)
                }
            }
        }
    }

    /// The bytes that tell two captures apart: the frame's pixels as captured, or the fitted picture's.
    pub fn pixel_bytes(&self) -> &[u8] {
        match self {
            Picture::Whole(f) => f.pixel_bytes(),
            Picture::Fitted(f) => f.img.as_raw(),
        }
    }
}

/// A captured screen and what its capture cost.
pub struct Capture {
    pub picture: Picture,
    /// Bytes that crossed adb for it.
    pub wire_bytes: usize,
}
