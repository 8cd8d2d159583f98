//! The pixel pipeline, below the tools: how a phone's screen is fetched (`capture.rs`: the capture paths, their
//! probe and fallbacks; `parallel.rs`: the compressed capture spread over several of the phone's cores), what a
//! capture is (`frame.rs`: the bytes as the phone sent them and the layout their header names; `picture.rs`: the
//! whole frame or the picture fitted while it arrived), the area downscale (`downscale.rs`: the whole-frame
//! kernels; `fitting.rs`: the same fed row by row as a capture arrives), the encoders (`encode.rs`) and the
//! blank-screen check (`blank.rs`). Used alike by `android_screenshot` and `android_observe`, settle's frame
//! signatures and the wall's thumbnails and live view; it knows no tool, no channel and no file cache.
//!
//! Arrows inside, one way: capture → parallel → picture → fitting → frame → downscale; encode → frame.

pub mod blank;
pub mod capture;
pub mod downscale;
pub mod encode;
pub mod fitting;
pub mod frame;
pub mod parallel;
pub mod picture;

#[cfg(test)]
pub(crate) mod tests;
