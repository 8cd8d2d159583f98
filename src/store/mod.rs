//! The one place that knows SQL. SQLite (bundled) in WAL mode under the data dir; migrations are versioned in code
//! through `PRAGMA user_version`.
//!
//! Calls are synchronous behind a mutex: every statement is a small indexed read/write on a local file (well under
//! a millisecond with WAL + `synchronous=NORMAL`). The writes of every tool call (idempotency records, audit rows)
//! go through one writer thread that commits them in groups (`group.rs`): the WAL pages a burst of calls shares
//! are written once, not once per statement — on an SD card, writes are the budget, not time.

pub mod audit;
pub mod calls;
mod codec;
pub mod conditions;
mod db;
pub mod files;
pub mod group;
pub mod health;
pub mod private;
mod rows;

pub use db::{AuthRow, ChannelRow, InstanceRow, Result, Store};
