//! The live view's book (`live.rs` streams, this file only counts): viewers per phone, the running capture loop
//! of each watched phone, and the poke that wakes one. [`super::state::Wall`] owns it, so the book sits below the
//! wall while the streams and loops that fill it, which need the whole wall, sit above.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{watch, Notify};

use super::thumbs::Thumb;
use crate::device::DeviceKey;

/// The live frames of one phone, as its capture loop publishes them.
pub(super) type FrameTx = watch::Sender<Option<Arc<Thumb>>>;

#[derive(Default)]
pub struct Live {
    inner: Mutex<Inner>,
}

#[derive(Default)]
pub(super) struct Inner {
    /// Viewers per phone.
    pub(super) viewers: HashMap<DeviceKey, usize>,
    /// The running capture loop of a phone (its sender); a loop removes itself when it ends.
    pub(super) feeds: HashMap<DeviceKey, FrameTx>,
    /// Wakes a phone's capture loop out of its still-screen pace (operator input: the screen is about to change).
    pub(super) pokes: HashMap<DeviceKey, Arc<Notify>>,
}

impl Live {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The phone's screen is about to change (an operator's input): its capture loop, if one runs, captures now
    /// and at the full frame rate again.
    pub fn poke(&self, key: &DeviceKey) {
        if let Some(n) = self.lock().pokes.get(key) {
            n.notify_one();
        }
    }
}
