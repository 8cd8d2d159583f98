//! xAgent ADB Connector: an xAgent Connector Protocol 3.0 server for Android devices (`device.adb`).
//! See `ARCHITECTURE.md` for the map.

pub mod audit;
pub mod base64;
pub mod build_info;
pub mod channels;
pub mod cli;
pub mod config;
pub mod device;
pub mod files;
pub mod http;
pub mod idempotency;
pub mod metrics;
pub mod notify;
pub mod ops;
pub mod pixels;
pub mod policy;
pub mod protocol;
pub mod run;
pub mod server;
pub mod sim;
pub mod store;
pub mod tools;
pub mod wall;
