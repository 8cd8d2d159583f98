//! The per-channel budget of running tool calls, shared by every socket a channel was opened on (held by
//! `state::App`, taken by `tool.rs` for each call).

use std::sync::Arc;

/// Tool calls one channel may have running at once (side effects queue per device anyway; this bounds memory
/// and keeps one agent from monopolising the blocking pool).
pub const MAX_CONCURRENT_PER_CHANNEL: usize = 16;

/// Running tool calls per channel (at most [`MAX_CONCURRENT_PER_CHANNEL`] each), shared by every socket: a channel
/// re-opened on another socket keeps the same budget.
pub type ChannelSlots = Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>;

/// One running call's place in its channel's budget; released on drop.
pub struct ChannelSlot {
    map: ChannelSlots,
    channel: String,
}

impl Drop for ChannelSlot {
    fn drop(&mut self) {
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = m.get_mut(&self.channel) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.channel);
            }
        }
    }
}

impl ChannelSlot {
    /// Takes a slot in `channel`'s budget, or `None` when it is full.
    pub fn take(slots: &ChannelSlots, channel: &str) -> Option<ChannelSlot> {
        let mut m = slots.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.entry(channel.to_owned()).or_default();
        if *n >= MAX_CONCURRENT_PER_CHANNEL {
            return None;
        }
        *n += 1;
        Some(ChannelSlot { map: slots.clone(), channel: channel.to_owned() })
    }
}
