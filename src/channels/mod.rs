//! Connector instances, channels, device bindings and auth sessions: the state behind every user-level packet.
//!
//! One [`Hub`] per process. Its maps live behind one mutex that is never held across an `.await`; every change is
//! written to the [`Store`] before the in-memory state changes, so a crash loses nothing that was acknowledged.
//!
//! Lifecycle (protocol §8.2): a hello registers or resumes a *connector instance* (`connector_id`). When the last
//! socket of an instance drops, its lease starts (default one hour); a hello with the same id cancels it; on expiry
//! the instance and each of its channels are unregistered through [`Hub::cleanup_channel`], the same path a channel
//! takes on its own. Instances restored at start-up start with a lease too.

mod auth;
mod holds;
mod hub;
pub mod matching;
pub mod takeover;
pub mod tickets;
mod work;

pub use auth::AuthOutcome;
pub use hub::{mask_serial, to_value, Binding, HelloOk, Holder, Hub, HubConfig, Outbound, SocketId};
