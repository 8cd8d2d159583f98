//! Operator commands beside `serve`: `devices`, `doctor`, `demo`, `sim`, `audit`, `call`, `users` (the wall's operator accounts) and `mcp`
//! (the stdio bridge to `/mcp`). Each prints for a person and returns
//! an exit code; none of them holds protocol logic.

pub mod audit;
pub mod call;
pub mod demo;
pub mod devices;
pub mod doctor;
pub mod log_sink;
pub mod mcp;
pub mod out;
pub mod settings;
pub mod users;
pub mod words;

/// A private adb server for the demo and the simulated phones it connects to.
pub mod adb_process;
