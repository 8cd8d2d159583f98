//! SQL of the idempotency records (`tool_calls`, migration 4). See `crate::idempotency`.

use rusqlite::{params, OptionalExtension};

use super::group::Write;
use super::{Result, Store};

/// What is recorded about one side-effecting call: its state and the hash of its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallRecord {
    pub args_sha256: String,
    pub state: CallState,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CallState {
    /// Started and not finished: if no live task owns it, the process died during the call.
    Running,
    /// Finished; the JSON outcome to answer repeats with.
    Done(String),
}

impl Store {
    pub fn call_record(&self, channel: &str, tool: &str, call_id: &str) -> Result<Option<CallRecord>> {
        self.db()
            .query_row(
                "SELECT state, outcome, args_sha256 FROM tool_calls
                 WHERE channel_id = ?1 AND tool_id = ?2 AND tool_call_id = ?3",
                params![channel, tool, call_id],
                |r| {
                    let state: String = r.get(0)?;
                    let outcome: Option<String> = r.get(1)?;
                    let state = match (state.as_str(), outcome) {
                        ("done", Some(o)) => CallState::Done(o),
                        _ => CallState::Running,
                    };
                    Ok(CallRecord { args_sha256: r.get(2)?, state })
                },
            )
            .optional()
    }

    /// Records the start of a call (group commit; returns once committed). Fails if a record exists (the caller
    /// checked first, under its own lock).
    pub fn call_started(&self, channel: &str, tool: &str, call_id: &str, args_sha256: &str, now_ms: u64) -> Result<()> {
        self.commit(Write::CallStarted {
            channel: channel.into(),
            tool: tool.into(),
            call_id: call_id.into(),
            args_sha256: args_sha256.into(),
            now_ms,
        })
    }

    /// Records the outcome of a call (group commit; returns once committed).
    pub fn call_finished(&self, channel: &str, tool: &str, call_id: &str, outcome: &str, now_ms: u64) -> Result<()> {
        self.call_finished_with(channel, tool, call_id, outcome, now_ms, None)
    }

    /// [`Store::call_finished`] and `also` (the call's audit row) in one transaction.
    pub fn call_finished_with(
        &self,
        channel: &str,
        tool: &str,
        call_id: &str,
        outcome: &str,
        now_ms: u64,
        also: Option<Write>,
    ) -> Result<()> {
        let finished = Write::CallFinished {
            channel: channel.into(),
            tool: tool.into(),
            call_id: call_id.into(),
            outcome: outcome.into(),
            now_ms,
        };
        self.commit_all(std::iter::once(finished).chain(also).collect())
    }

    /// Drops finished records older than `before_ms` and, beyond `keep`, the oldest ones. Returns rows removed.
    pub fn prune_calls(&self, before_ms: u64, keep: u64) -> Result<usize> {
        let db = self.db();
        // Older than `before_ms`: walked from the oldest record (rowid order is time order), so the cost is what
        // is removed, not the table.
        let first_young: Option<i64> = db
            .query_row(
                "SELECT id FROM tool_calls WHERE created_ms >= ?1 ORDER BY id LIMIT 1",
                params![before_ms as i64],
                |r| r.get(0),
            )
            .optional()?;
        let mut n = match first_young {
            Some(id) => db.execute("DELETE FROM tool_calls WHERE state = 'done' AND id < ?1", params![id])?,
            None => db.execute("DELETE FROM tool_calls WHERE state = 'done'", [])?,
        };
        // Beyond `keep`: the oldest, by rowid (records are appended in time order; since migration 7 there is no
        // age index for every call to write).
        n += db.execute(
            "DELETE FROM tool_calls WHERE state = 'done' AND id <= (SELECT id FROM tool_calls
             WHERE state = 'done' ORDER BY id DESC LIMIT 1 OFFSET ?1)",
            params![keep as i64],
        )?;
        Ok(n)
    }
}
