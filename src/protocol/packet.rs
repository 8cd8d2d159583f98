//! The packet envelope (protocol §7): parsing with field-precise errors, and builders for what we send.

use serde::Serialize;
use serde_json::{Map, Value};

use super::consts::PACKET_SCHEMA;
use super::errors::{ErrorCode, ProtoError};
use super::ids;
use super::time::now_ms;

/// One data-plane packet. Unknown envelope fields are ignored on input (forward compatibility) and never emitted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Packet {
    pub schema: &'static str,
    pub packet_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connector_channel_id: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payload: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<WireError>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WireError {
    pub code: String,
    pub message: String,
    /// Structured data of the error ([`ProtoError::details`]); absent when there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl WireError {
    fn of(err: &ProtoError) -> WireError {
        WireError { code: err.code.as_str().to_owned(), message: err.message.clone(), details: err.details.clone() }
    }
}

/// What a parse failure still knows about the offending packet, so the `error` reply can be routed
/// (`request_id`, `reply_to`) even when the envelope is broken.
#[derive(Debug)]
pub struct ParseFailure {
    pub error: ProtoError,
    pub request_id: Option<String>,
    pub packet_id: Option<String>,
    pub connector_channel_id: Option<String>,
}

fn opt_string(obj: &Map<String, Value>, field: &str) -> Result<Option<String>, ProtoError> {
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ProtoError::new(ErrorCode::InvalidPacket, format!("envelope field `{field}` must be a string"))),
    }
}

impl Packet {
    /// Parses and validates one text frame against the envelope rules of §7 and the official packet schema.
    pub fn parse(text: &str) -> Result<Packet, Box<ParseFailure>> {
        let value: Value = serde_json::from_str(text).map_err(|e| {
            Box::new(ParseFailure {
                error: ProtoError::new(ErrorCode::InvalidPacket, format!("packet is not valid JSON: {e}")),
                request_id: None,
                packet_id: None,
                connector_channel_id: None,
            })
        })?;
        let Value::Object(obj) = value else {
            return Err(Box::new(ParseFailure {
                error: ProtoError::new(ErrorCode::InvalidPacket, "packet must be a JSON object"),
                request_id: None,
                packet_id: None,
                connector_channel_id: None,
            }));
        };
        let best_effort = |field: &str| obj.get(field).and_then(Value::as_str).map(str::to_owned);
        let fail = |error: ProtoError| {
            Box::new(ParseFailure {
                error,
                request_id: best_effort("request_id"),
                packet_id: best_effort("packet_id"),
                connector_channel_id: best_effort("connector_channel_id"),
            })
        };
        Self::from_object(&obj).map_err(fail)
    }

    fn from_object(obj: &Map<String, Value>) -> Result<Packet, ProtoError> {
        let invalid = |m: &str| ProtoError::new(ErrorCode::InvalidPacket, m);
        match obj.get("schema") {
            Some(Value::String(s)) if s == PACKET_SCHEMA => {}
            Some(_) => return Err(invalid(&format!("envelope field `schema` must be \"{PACKET_SCHEMA}\""))),
            None => return Err(invalid("envelope field `schema` is required")),
        }
        let packet_id = opt_string(obj, "packet_id")?.filter(|s| !s.is_empty());
        let packet_id =
            packet_id.ok_or_else(|| invalid("envelope field `packet_id` is required and must be non-empty"))?;
        let kind = opt_string(obj, "type")?.filter(|s| !s.is_empty());
        let kind = kind.ok_or_else(|| invalid("envelope field `type` is required and must be non-empty"))?;
        let request_id = opt_string(obj, "request_id")?;
        let reply_to = opt_string(obj, "reply_to")?;
        let connector_channel_id = opt_string(obj, "connector_channel_id")?;
        let time = match obj.get("time") {
            None | Some(Value::Null) => None,
            // JSON Schema's "integer" includes integral floats (`5.0`, `1e3`), which some senders write.
            Some(v) => Some(
                v.as_u64()
                    .or_else(|| v.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1.8e19).map(|f| f as u64))
                    .ok_or_else(|| invalid("envelope field `time` must be a non-negative integer (Unix ms)"))?,
            ),
        };
        let payload = match obj.get("payload") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => Some(m.clone()),
            Some(_) => return Err(invalid("envelope field `payload` must be an object")),
        };
        let error = match obj.get("error") {
            None | Some(Value::Null) => None,
            Some(Value::Object(m)) => {
                let code = m.get("code").and_then(Value::as_str).filter(|s| !s.is_empty());
                let code = code.ok_or_else(|| invalid("envelope field `error.code` must be a non-empty string"))?;
                let message = match m.get("message") {
                    None | Some(Value::Null) => String::new(),
                    Some(Value::String(s)) => s.clone(),
                    Some(_) => return Err(invalid("envelope field `error.message` must be a string")),
                };
                Some(WireError { code: code.to_owned(), message, details: m.get("details").cloned() })
            }
            Some(_) => return Err(invalid("envelope field `error` must be an object")),
        };
        Ok(Packet {
            schema: PACKET_SCHEMA,
            packet_id,
            request_id,
            reply_to,
            connector_channel_id,
            kind,
            time,
            payload,
            error,
        })
    }

    /// The payload, or an empty object when absent ("payload 当前可为空").
    pub fn payload(&self) -> Map<String, Value> {
        self.payload.clone().unwrap_or_default()
    }

    /// A request as a data-plane client sends it (fresh `packet_id` and `request_id`): what the in-process client
    /// of the MCP endpoint (`server::ws::local`) feeds the same dispatcher a socket's frames go to.
    pub fn request(kind: &str, channel: Option<&str>, payload: Map<String, Value>) -> Packet {
        let mut p = Packet::push(kind, channel, payload);
        p.request_id = Some(ids::packet_id());
        p
    }

    /// A fresh packet sent by the connector on its own initiative (a push).
    pub fn push(kind: &str, channel: Option<&str>, payload: Map<String, Value>) -> Packet {
        Packet {
            schema: PACKET_SCHEMA,
            packet_id: ids::packet_id(),
            request_id: None,
            reply_to: None,
            connector_channel_id: channel.map(str::to_owned),
            kind: kind.to_owned(),
            time: Some(now_ms()),
            payload: Some(payload),
            error: None,
        }
    }

    /// The ack of `self`: "Ack packet 应带回请求的 request_id，建议用 reply_to 指向请求 packet_id" (§7).
    pub fn ack(&self, kind: &str, channel: Option<&str>, payload: Map<String, Value>) -> Packet {
        Packet {
            schema: PACKET_SCHEMA,
            packet_id: ids::packet_id(),
            request_id: self.request_id.clone(),
            reply_to: Some(self.packet_id.clone()),
            connector_channel_id: channel.map(str::to_owned),
            kind: kind.to_owned(),
            time: Some(now_ms()),
            payload: Some(payload),
            error: None,
        }
    }

    /// A business failure: the ack type with a top-level `error` (§7 "业务操作失败使用对应 ack packet 的 error 字段").
    pub fn ack_error(
        &self,
        kind: &str,
        channel: Option<&str>,
        err: &ProtoError,
        payload: Option<Map<String, Value>>,
    ) -> Packet {
        let mut p = self.ack(kind, channel, payload.unwrap_or_default());
        if p.payload.as_ref().is_some_and(Map::is_empty) {
            p.payload = None;
        }
        p.error = Some(WireError::of(err));
        p
    }

    /// A protocol/identity/routing/order failure: `type = "error"` (§7, §8.23).
    pub fn error_reply(
        request_id: Option<String>,
        reply_to: Option<String>,
        channel: Option<String>,
        err: &ProtoError,
    ) -> Packet {
        Packet {
            schema: PACKET_SCHEMA,
            packet_id: ids::packet_id(),
            request_id,
            reply_to,
            connector_channel_id: channel,
            kind: "error".to_owned(),
            time: Some(now_ms()),
            payload: None,
            error: Some(WireError::of(err)),
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("packets always serialise")
    }
}

/// Builds a JSON object from `(key, value)` pairs: keeps handler code free of `json!` noise for payloads.
pub fn obj<const N: usize>(pairs: [(&str, Value); N]) -> Map<String, Value> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse_err(text: &str) -> ParseFailure {
        *Packet::parse(text).unwrap_err()
    }

    #[test]
    fn parses_a_full_envelope() {
        let p = Packet::parse(
            r#"{"schema":"xagent.connector.packet/v1","packet_id":"pkt_1","request_id":"req_1","connector_channel_id":"cch_1","type":"tool.invoke","time":1790000000000,"payload":{"tool_id":"x"},"extra":1}"#,
        )
        .unwrap();
        assert_eq!(p.kind, "tool.invoke");
        assert_eq!(p.request_id.as_deref(), Some("req_1"));
        assert_eq!(p.payload().get("tool_id"), Some(&json!("x")));
    }

    #[test]
    fn rejects_bad_envelopes_naming_the_field() {
        let cases = [
            ("not json", "not valid JSON"),
            ("[]", "JSON object"),
            (r#"{"packet_id":"p","type":"ping"}"#, "`schema` is required"),
            (r#"{"schema":"x","packet_id":"p","type":"ping"}"#, "`schema` must be"),
            (r#"{"schema":"xagent.connector.packet/v1","type":"ping"}"#, "`packet_id`"),
            (r#"{"schema":"xagent.connector.packet/v1","packet_id":"","type":"ping"}"#, "`packet_id`"),
            (r#"{"schema":"xagent.connector.packet/v1","packet_id":"p"}"#, "`type`"),
            (r#"{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"ping","time":-1}"#, "`time`"),
            (r#"{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"ping","time":1.5}"#, "`time`"),
            (r#"{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"ping","payload":[]}"#, "`payload`"),
            (r#"{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"ping","request_id":5}"#, "`request_id`"),
            (r#"{"schema":"xagent.connector.packet/v1","packet_id":"p","type":"ping","error":{}}"#, "`error.code`"),
        ];
        for (text, needle) in cases {
            let f = parse_err(text);
            assert_eq!(f.error.code, ErrorCode::InvalidPacket, "{text}");
            assert!(f.error.message.contains(needle), "{text}: {}", f.error.message);
        }
    }

    #[test]
    fn parse_failure_keeps_routing_fields() {
        let f = parse_err(r#"{"schema":"nope","packet_id":"pkt_9","request_id":"req_9","type":"ping"}"#);
        assert_eq!(f.request_id.as_deref(), Some("req_9"));
        assert_eq!(f.packet_id.as_deref(), Some("pkt_9"));
    }

    #[test]
    fn ack_echoes_request_id_and_replies_to_packet_id() {
        let req = Packet::parse(
            r#"{"schema":"xagent.connector.packet/v1","packet_id":"pkt_a","request_id":"req_a","type":"ping"}"#,
        )
        .unwrap();
        let ack = req.ack("pong", None, Map::new());
        assert_eq!(ack.request_id.as_deref(), Some("req_a"));
        assert_eq!(ack.reply_to.as_deref(), Some("pkt_a"));
        assert_ne!(ack.packet_id, "pkt_a");
        let v: Value = serde_json::from_str(&ack.to_json()).unwrap();
        assert_eq!(v["schema"], "xagent.connector.packet/v1");
        assert!(v["time"].as_u64().unwrap() > 1_700_000_000_000);
        assert!(v.get("error").is_none());
    }

    #[test]
    fn ack_error_carries_top_level_error() {
        let req = Packet::parse(
            r#"{"schema":"xagent.connector.packet/v1","packet_id":"p","request_id":"r","type":"tool.invoke"}"#,
        )
        .unwrap();
        let ack =
            req.ack_error("tool.invoke.ack", Some("cch"), &ProtoError::new(ErrorCode::ToolInvokeFailed, "boom"), None);
        let v: Value = serde_json::from_str(&ack.to_json()).unwrap();
        assert_eq!(v["error"]["code"], "tool_invoke_failed");
        assert_eq!(v["type"], "tool.invoke.ack");
        assert!(v.get("payload").is_none());
    }
}
