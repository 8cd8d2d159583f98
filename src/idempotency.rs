//! Repeated-call semantics of side-effecting tools (protocol §8.19: "有副作用工具必须具备幂等或重复调用识别能力";
//! profile: "a network retry must not silently execute twice").
//!
//! A call is identified by channel + tool + `payload.context.tool_call_id`. The first arrival runs; a repeat while
//! it runs waits for it and answers with the same outcome; a repeat afterwards answers with the recorded outcome
//! without touching the device. Records are in SQLite, so this holds across reconnects and restarts. A record left
//! `running` by a process that died mid-call answers `tool_invoke_failed` ("effect unknown") rather than guessing.
//! A repeat whose arguments differ from the recorded call is refused (`invalid_arguments`): one id, one call.
//! Calls without a `tool_call_id` cannot be recognised and simply run. Schema validation and the binding and
//! device-state gates run before the record is made, so those refusals are re-evaluated on a retry; everything
//! the tool itself answers (including its own argument checks and `device_timeout`) is recorded. Only a hash of
//! the arguments is stored, never the arguments (typed text stays out of the database).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::watch;

use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::now_ms;
use crate::store::calls::CallState;
use crate::store::Store;

/// How long finished records are kept, and how many at most.
pub const RETENTION: Duration = Duration::from_secs(24 * 3600);
pub const MAX_RECORDS: u64 = 100_000;

pub type Outcome = Result<Value, ProtoError>;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallKey {
    pub channel: String,
    pub tool: String,
    pub call_id: String,
}

/// SHA-256 of the canonical JSON of the arguments (serde_json maps are key-sorted).
pub fn args_digest(args: &serde_json::Map<String, Value>) -> String {
    use sha2::Digest;
    let bytes = serde_json::to_vec(args).unwrap_or_default();
    sha2::Sha256::digest(&bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// What to do with an arriving call.
pub enum Begin {
    /// First arrival: run it, then [`Calls::finish`].
    Run,
    /// Already finished: answer with this, do not run.
    Replay(Outcome),
    /// Running right now: wait on this for its outcome.
    Wait(watch::Receiver<Option<Outcome>>),
}

pub struct Calls {
    store: Store,
    running: Mutex<HashMap<CallKey, watch::Sender<Option<Outcome>>>>,
}

fn encode(o: &Outcome) -> String {
    match o {
        Ok(v) => json!({"result": v}).to_string(),
        Err(e) => json!({"error": {"code": e.code.as_str(), "message": e.message, "details": e.details}}).to_string(),
    }
}

fn decode(s: &str) -> Outcome {
    let v: Value = serde_json::from_str(s).unwrap_or(Value::Null);
    if let Some(r) = v.get("result") {
        return Ok(r.clone());
    }
    let code = v.pointer("/error/code").and_then(Value::as_str).unwrap_or("tool_invoke_failed");
    let message = v.pointer("/error/message").and_then(Value::as_str).unwrap_or("").to_owned();
    // A replayed error carries the details it had (e.g. the observation_id of an ambiguous selector's candidates).
    let details = v.pointer("/error/details").filter(|d| !d.is_null()).cloned();
    Err(ProtoError { code: ErrorCode::from_wire(code), message, details })
}

fn store_err(e: rusqlite::Error) -> ProtoError {
    tracing::error!(error = %e, "idempotency store failure");
    ProtoError::new(ErrorCode::Internal, "the connector's state store failed; see the connector log")
}

impl Calls {
    pub fn new(store: Store) -> Calls {
        Calls { store, running: Mutex::new(HashMap::new()) }
    }

    pub fn begin(&self, key: &CallKey, args_sha256: &str) -> Result<Begin, ProtoError> {
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let record = self.store.call_record(&key.channel, &key.tool, &key.call_id).map_err(store_err)?;
        if record.as_ref().is_some_and(|r| !r.same_args(args_sha256)) {
            return Err(ProtoError::new(
                ErrorCode::InvalidArguments,
                format!(
                    "tool_call_id {:?} was already used for {} with other arguments; use a new id",
                    key.call_id, key.tool
                ),
            ));
        }
        if let Some(tx) = running.get(key) {
            return Ok(Begin::Wait(tx.subscribe()));
        }
        match record.map(|r| r.state) {
            Some(CallState::Done(o)) => Ok(Begin::Replay(decode(&o))),
            Some(CallState::Running) => {
                // Nobody in this process runs it: the previous process died during the call.
                let o: Outcome = Err(ProtoError::new(
                    ErrorCode::ToolInvokeFailed,
                    "this call was interrupted by a connector restart; whether it took effect is unknown — observe \
                     the device, then act with a new call",
                ));
                self.store
                    .call_finished(&key.channel, &key.tool, &key.call_id, &encode(&o), now_ms())
                    .map_err(store_err)?;
                Ok(Begin::Replay(o))
            }
            None => {
                // Claimed in memory first (a repeat arriving now waits for this call), then recorded outside the
                // lock: the record's commit is grouped with other calls' writes (`store::group`), and holding the
                // lock across it would serialise every call's start behind one commit at a time.
                running.insert(key.clone(), watch::channel(None).0);
                drop(running);
                if let Err(e) = self.store.call_started(&key.channel, &key.tool, &key.call_id, args_sha256, now_ms()) {
                    let e = store_err(e);
                    if let Some(tx) = self.running.lock().unwrap_or_else(|e| e.into_inner()).remove(key) {
                        let _ = tx.send(Some(Err(e.clone())));
                    }
                    return Err(e);
                }
                Ok(Begin::Run)
            }
        }
    }

    /// Records the outcome of a call that [`Begin::Run`] started and wakes everyone waiting for it.
    pub fn finish(&self, key: &CallKey, outcome: &Outcome) -> bool {
        self.finish_with(key, outcome, Vec::new())
    }

    /// [`Calls::finish`], committing `also` (the call's audit row) in the same transaction: one commit per call.
    pub fn finish_with(&self, key: &CallKey, outcome: &Outcome, also: Vec<crate::store::group::Write>) -> bool {
        let (encoded, now) = (encode(outcome), now_ms());
        let committed = match self.store.call_finished_with(&key.channel, &key.tool, &key.call_id, &encoded, now, also)
        {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(error = %e, "could not record a tool outcome");
                false
            }
        };
        if let Some(tx) = self.running.lock().unwrap_or_else(|e| e.into_inner()).remove(key) {
            let _ = tx.send(Some(outcome.clone()));
        }
        committed
    }

    /// Waits for the outcome of a call another task runs, at most `limit` (the first call is bounded by its tool
    /// deadline, so `limit` is that plus a margin; should it never report — its task was aborted — the repeat
    /// answers `device_timeout` instead of waiting, and holding its channel slot, forever).
    pub async fn wait(mut rx: watch::Receiver<Option<Outcome>>, limit: Duration) -> Outcome {
        let outcome = async {
            loop {
                if let Some(o) = rx.borrow().clone() {
                    return o;
                }
                if rx.changed().await.is_err() {
                    return Err(ProtoError::new(
                        ErrorCode::ToolInvokeFailed,
                        "the original call ended without an outcome",
                    ));
                }
            }
        };
        match tokio::time::timeout(limit, outcome).await {
            Ok(o) => o,
            Err(_) => Err(ProtoError::new(
                ErrorCode::DeviceTimeout,
                "the first call with this tool_call_id did not report within its deadline; observe the device, then \
                 act with a new call",
            )),
        }
    }

    /// Bounded retention: drop old finished records.
    pub fn prune(&self) {
        let before = now_ms().saturating_sub(RETENTION.as_millis() as u64);
        match self.store.prune_calls(before, MAX_RECORDS) {
            Ok(0) => {}
            Ok(n) => tracing::debug!(removed = n, "pruned idempotency records"),
            Err(e) => tracing::warn!(error = %e, "could not prune idempotency records"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_error_keeps_its_details() {
        let e = ProtoError::new(ErrorCode::AmbiguousElement, "2 match")
            .with_details(json!({"observation_id": "obs_1", "candidates": [{"index": 2}]}));
        assert_eq!(decode(&encode(&Err(e.clone()))), Err(e));
        let plain = ProtoError::new(ErrorCode::DeviceTimeout, "slow");
        assert_eq!(decode(&encode(&Err(plain.clone()))), Err(plain), "no details stays none");
    }

    fn key() -> CallKey {
        CallKey { channel: "c1".into(), tool: "android_tap".into(), call_id: "call_1".into() }
    }

    fn store() -> Store {
        let s = Store::open_in_memory().unwrap();
        s.upsert_instance("conn", &[], 1).unwrap();
        s.insert_channel("c1", "conn", 1).unwrap();
        s
    }

    #[tokio::test]
    async fn first_runs_concurrent_waits_later_replays() {
        let calls = Calls::new(store());
        assert!(matches!(calls.begin(&key(), "h").unwrap(), Begin::Run));
        let Begin::Wait(rx) = calls.begin(&key(), "h").unwrap() else { panic!("a repeat while running waits") };
        let waiter = tokio::spawn(Calls::wait(rx, Duration::from_secs(30)));
        calls.finish(&key(), &Ok(json!({"x": 1})));
        assert_eq!(waiter.await.unwrap().unwrap(), json!({"x": 1}));
        let Begin::Replay(o) = calls.begin(&key(), "h").unwrap() else { panic!("a repeat afterwards replays") };
        assert_eq!(o.unwrap(), json!({"x": 1}));
        let Err(e) = calls.begin(&key(), "other") else { panic!("other arguments under the same id are refused") };
        assert_eq!(e.code, ErrorCode::InvalidArguments);
        // Errors replay with their code.
        let k2 = CallKey { call_id: "call_2".into(), ..key() };
        assert!(matches!(calls.begin(&k2, "h").unwrap(), Begin::Run));
        calls.finish(&k2, &Err(ProtoError::new(ErrorCode::DeviceTimeout, "slow")));
        let Begin::Replay(Err(e)) = calls.begin(&k2, "h").unwrap() else { panic!() };
        assert_eq!((e.code, e.message.as_str()), (ErrorCode::DeviceTimeout, "slow"));
    }

    #[tokio::test]
    async fn a_wait_on_a_call_that_never_reports_has_a_deadline() {
        let calls = Calls::new(store());
        assert!(matches!(calls.begin(&key(), "h").unwrap(), Begin::Run));
        let Begin::Wait(rx) = calls.begin(&key(), "h").unwrap() else { panic!("a repeat while running waits") };
        // Nobody finishes the first call: the repeat gives up at its deadline instead of waiting forever.
        let started = std::time::Instant::now();
        let e = Calls::wait(rx, Duration::from_millis(50)).await.unwrap_err();
        assert_eq!(e.code, ErrorCode::DeviceTimeout);
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn a_call_left_running_by_a_dead_process_is_reported_unknown() {
        let s = store();
        Calls::new(s.clone()).begin(&key(), "h").unwrap(); // the "old process" starts and dies
        let fresh = Calls::new(s);
        let Begin::Replay(Err(e)) = fresh.begin(&key(), "h").unwrap() else { panic!() };
        assert_eq!(e.code, ErrorCode::ToolInvokeFailed);
        assert!(e.message.contains("unknown"));
    }

    #[test]
    fn pruning_keeps_recent_and_bounded() {
        let s = store();
        for i in 0..5 {
            s.call_started("c1", "t", &format!("k{i}"), "h", 1000 + i).unwrap();
            s.call_finished("c1", "t", &format!("k{i}"), "{}", 2000).unwrap();
        }
        assert_eq!(s.prune_calls(1002, 100).unwrap(), 2, "older than the cut-off");
        assert_eq!(s.prune_calls(0, 1).unwrap(), 2, "beyond the cap, oldest first");
        assert!(s.call_record("c1", "t", "k4").unwrap().is_some());
        assert_eq!(args_digest(&serde_json::Map::new()).len(), 64);
    }
}
