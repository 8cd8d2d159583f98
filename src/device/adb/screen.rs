//! What the screen is doing, per phone (part of [`AdbBackend`], moved out of `adb.rs` to keep it under 1,000
//! lines): the screen state (awake, keyguard) with its short cache and what our own input vouches for, the rotation
//! and the display size in the current orientation.

use std::time::{Duration, Instant};

use super::super::formats;
use super::super::key::DeviceKey;
use super::super::power::{self, ScreenState};
use super::{AdbBackend, KnownState, INPUT_KEEPS_AWAKE, ROTATION_TTL, SCREEN_STATE_TTL};
use crate::protocol::errors::ProtoError;

/// The lines of `dumpsys input` that [`formats::rotation`] reads, in every version's form.
const ROTATION_COMMAND: &str =
    "dumpsys input | grep -E 'SurfaceOrientation:|InputDeviceOrientation:|Viewport INTERNAL:'; true";

impl AdbBackend {
    /// Whether the screen is on and the keyguard showing: one round trip ([`power::QUERY`]), reused for
    /// [`SCREEN_STATE_TTL`] unless a side effect on the device ran since. A phone that prints neither half
    /// yields an all-unknown state (never an error: an unknown state does not block input).
    pub async fn screen_state(&self, key: &DeviceKey) -> Result<ScreenState, ProtoError> {
        if let Some(k) = self.screen_states.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
            if let (Some(s), true) = (k.state, Instant::now() < k.trusted_until) {
                return Ok(s);
            }
        }
        let read_at = Instant::now();
        // The helper's `screen` answers from the system services in a few ms on its open stream; else one shell
        // round trip of `dumpsys`.
        let s = match self.helper(key, false, Duration::from_secs(5), "screen", "", Duration::ZERO).await? {
            Some(p) => {
                // The same answer names the rotation: kept, so the next coordinate check needs no `dumpsys input`.
                if let Some(r) = ScreenState::helper_field(&p, "rotation") {
                    let r = (r % 4) as u8;
                    self.rotations.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), (Instant::now(), r));
                }
                ScreenState::from_helper(&p)
            }
            None => ScreenState::parse(&self.shell(key, power::QUERY, false, Duration::from_secs(5)).await?.stdout),
        };
        let mut map = self.screen_states.lock().unwrap_or_else(|e| e.into_inner());
        if map.get(key).is_none_or(|k| k.at <= read_at) {
            let known = KnownState { at: read_at, trusted_until: read_at + SCREEN_STATE_TTL, state: Some(s) };
            map.insert(key.clone(), known);
        }
        Ok(s)
    }

    /// Forgets the screen state of `key` (after anything that may have changed it), including any read still
    /// in flight.
    pub fn forget_screen_state(&self, key: &DeviceKey) {
        let now = Instant::now();
        let known = KnownState { at: now, trusted_until: now, state: None };
        self.screen_states.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), known);
    }

    /// An input of ours (a touch, a key other than the power keys, text) reached a phone that was `before`: if
    /// that was awake and unlocked, it stays so for [`INPUT_KEEPS_AWAKE`] (the input reset the screen timeout).
    /// Called by the input tools after their input; anything else an ordered operation does forgets the state.
    pub fn kept_awake_by_input(&self, key: &DeviceKey, before: ScreenState) {
        if before.asleep() || before.is_locked() {
            return;
        }
        let now = Instant::now();
        let known = KnownState { at: now, trusted_until: now + INPUT_KEEPS_AWAKE, state: Some(before) };
        self.screen_states.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), known);
    }

    /// The display's current rotation in quarter turns (0–3) from the touch mapper (`dumpsys input`, one round
    /// trip; every form of the versions, see [`formats::rotation`]), reused for [`ROTATION_TTL`]. A phone that
    /// prints none of them counts as unrotated.
    pub async fn rotation(&self, key: &DeviceKey) -> Result<u8, ProtoError> {
        if let Some((at, r)) = self.rotations.lock().unwrap_or_else(|e| e.into_inner()).get(key) {
            if at.elapsed() < ROTATION_TTL {
                return Ok(*r);
            }
        }
        self.rotation_now(key).await
    }

    /// The rotation read now (the cache refreshed): for a decision the cached value would make wrongly, such as
    /// refusing a point of a phone that was turned less than [`ROTATION_TTL`] ago.
    pub async fn rotation_now(&self, key: &DeviceKey) -> Result<u8, ProtoError> {
        // The helper's `screen` has it from the display service in a few ms on its open stream; `dumpsys input`
        // (one round trip, a process start, a long dump) where it does not run or cannot say.
        // A helper that does not answer in time (a first start on a loaded phone) leaves it to the shell.
        let helper = self.helper(key, false, Duration::from_secs(5), "screen", "", Duration::ZERO).await.ok().flatten();
        let r = match helper.as_deref().and_then(|p| ScreenState::helper_field(p, "rotation")) {
            Some(r) => (r % 4) as u8,
            None => {
                let out = self.shell(key, ROTATION_COMMAND, false, Duration::from_secs(5)).await?;
                formats::rotation(&out.stdout).unwrap_or(0)
            }
        };
        self.rotations.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), (Instant::now(), r));
        Ok(r)
    }

    /// The screen size in the current orientation: the natural size, swapped when rotated a quarter turn.
    pub async fn display_size(&self, key: &DeviceKey) -> Result<(u32, u32), ProtoError> {
        let (w, h) = self.screen_size(key).await?;
        Ok(if self.rotation(key).await? % 2 == 1 { (h, w) } else { (w, h) })
    }

    /// [`AdbBackend::display_size`] with the rotation read now.
    pub async fn display_size_now(&self, key: &DeviceKey) -> Result<(u32, u32), ProtoError> {
        let (w, h) = self.screen_size(key).await?;
        Ok(if self.rotation_now(key).await? % 2 == 1 { (h, w) } else { (w, h) })
    }
}
