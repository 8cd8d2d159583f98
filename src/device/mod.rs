//! The device side as the connector core sees it: a [`Backend`] that knows which devices exist, in which state,
//! and tells when that changes. Only this module tree talks ADB.

pub mod adb;
pub mod backend;
pub mod clipboard;
pub mod conditions;
pub mod devtools;
pub mod fake;
pub mod formats;
pub mod gunzip;
pub mod health;
pub mod helper;
pub mod host;
pub mod identity;
pub mod input;
pub mod key;
pub mod lease;
pub mod link;
pub mod notifications;
pub mod permissions;
pub mod phones;
pub mod power;
pub mod recovery;
pub mod recovery_config;
pub mod sent;
pub mod shell;
pub mod text;
pub mod transport;

pub use backend::{Backend, NoDevices};
pub use key::{DeviceInfo, DeviceKey, DeviceState, UNREACHABLE_AFTER};
