//! Wire types and validation of the xAgent Connector Common Protocol 3.0: no I/O here.
//!
//! Only this module knows JSON field names of the wire. The cross-rules of the protocol text are unit-tested here;
//! everything the connector sends is checked against the official schemas (vendored in
//! `tests/fixtures/xagent-schemas/`) by the integration tests.

pub mod card;
mod consts;
pub mod descriptor;
pub mod errors;
pub mod ids;
pub mod packet;
mod time;

pub use errors::ErrorCode;
pub use packet::Packet;

pub use consts::{
    compare_versions, CARD_SCHEMA, CONNECTOR_CARD_ID, DESCRIPTOR_SCHEMA, DEVICE_PROFILE, PACKET_SCHEMA,
    PROFILE_TARGET_TYPES, PROTOCOL_VERSION, PROVIDER, SKILL_NAME, SUBPROTOCOL, TARGET_LABEL, TARGET_TYPE, TARGET_TYPES,
};
pub use time::{now_ms, utc};
