//! Group commit of the per-call writes (idempotency records and audit rows): one writer thread applies every
//! queued write in one transaction, so a burst of calls on several phones costs one WAL append of the pages they
//! share (the tail leaf of each table, the audit head) instead of one per statement. This is what keeps a tap's
//! write to the SD card small (BENCHMARKS.md, "footprint-writes").
//!
//! Durability: a caller returns only after its transaction committed. A commit is a `write()` into the WAL, so it
//! survives the process being killed (`kill -9`, a panic abort): the kernel has the bytes. With
//! `synchronous=NORMAL` the WAL is not fsynced per commit, so an OS crash or power loss can lose the commits since
//! the last checkpoint (README, "What a power cut may lose"); the database itself stays consistent.
//!
//! Batching policy: a lone call never waits. The writer waits up to [`WINDOW`] for more writes only while other
//! calls are running ([`Store::call_activity`]) and stops waiting as soon as every running call has queued one.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, Transaction};

use rusqlite::Result;

use super::codec::{key_hash, pack_digest, pack_outcome};
use super::rows::{self, AuditRow};

/// Longest a batch waits for the writes of other running calls.
pub const WINDOW: Duration = Duration::from_millis(5);
/// Most writes in one transaction (bounds the time the connection is held).
const MAX_BATCH: usize = 256;

/// One write of a tool call.
#[derive(Clone)]
pub enum Write {
    CallStarted {
        channel: String,
        tool: String,
        call_id: String,
        args_sha256: String,
        now_ms: u64,
    },
    CallFinished {
        channel: String,
        tool: String,
        call_id: String,
        outcome: String,
        now_ms: u64,
    },
    /// Appended to the chain in queue order; `hash` computes the record's hash once `prev_hash` is set.
    Audit {
        rec: AuditRow,
        hash: fn(&AuditRow) -> String,
    },
}

type Reply = SyncSender<std::result::Result<(), String>>;
/// The writes of one caller, committed together (a call's outcome and its audit row).
type Job = (Vec<Write>, Reply);

/// The writer thread's queue and the count of running calls (shared by every clone of one [`Store`]).
#[derive(Default)]
pub(super) struct Group {
    tx: Mutex<Option<Sender<Job>>>,
    active: Arc<AtomicUsize>,
}

/// Held while a tool call runs (see the module docs): tells the writer that more writes are coming.
pub struct Activity(Arc<AtomicUsize>);

impl Drop for Activity {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Group {
    /// Marks a tool call as running until the guard is dropped ([`Store::call_activity`]).
    pub(super) fn activity(&self) -> Activity {
        self.active.fetch_add(1, Ordering::SeqCst);
        Activity(self.active.clone())
    }

    /// Queues `writes` for the next group commit on `conn` and waits until they are committed ([`Store::commit_all`]).
    pub(super) fn commit_all(&self, conn: &Arc<Mutex<Connection>>, writes: Vec<Write>) -> Result<()> {
        let (reply, done) = mpsc::sync_channel(1);
        {
            let mut tx = self.tx.lock().unwrap_or_else(|e| e.into_inner());
            let sender = tx.get_or_insert_with(|| {
                let (tx, rx) = mpsc::channel();
                let (conn, active) = (conn.clone(), self.active.clone());
                std::thread::Builder::new()
                    .name("store-writer".into())
                    .spawn(move || writer(conn, active, rx))
                    .expect("spawn the store writer thread");
                tx
            });
            if sender.send((writes, reply)).is_err() {
                return Err(gone());
            }
        }
        match done.recv() {
            Ok(Ok(())) => Ok(()),
            Ok(Err(message)) => Err(rusqlite::Error::InvalidParameterName(message)),
            Err(_) => Err(gone()),
        }
    }
}

fn gone() -> rusqlite::Error {
    rusqlite::Error::InvalidParameterName("the state writer thread is gone".into())
}

/// Ends when every [`Store`] clone (and so the sender) is dropped.
fn writer(conn: Arc<Mutex<Connection>>, active: Arc<AtomicUsize>, rx: Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        let deadline = Instant::now() + WINDOW;
        loop {
            // Everything already queued joins; more is waited for only while other calls may still add some.
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(w) => batch.push(w),
                    Err(_) => break,
                }
            }
            if batch.len() >= MAX_BATCH || batch.len() >= active.load(Ordering::SeqCst) {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            match rx.recv_timeout(deadline - now) {
                Ok(w) => batch.push(w),
                Err(_) => break,
            }
        }
        tracing::trace!(writes = batch.len(), running = active.load(Ordering::SeqCst), "group commit");
        let mut db = conn.lock().unwrap_or_else(|e| e.into_inner());
        let all = apply(&mut db, batch.iter().flat_map(|(w, _)| w.iter()));
        match all {
            Ok(()) => {
                for (_, reply) in batch {
                    let _ = reply.send(Ok(()));
                }
            }
            // One bad write (a duplicate key, say) must not fail the others: apply them one by one.
            Err(_) => {
                for (w, reply) in batch {
                    let _ = reply.send(apply(&mut db, w.iter()).map_err(|e| e.to_string()));
                }
            }
        }
    }
}

/// Applies writes in one transaction; the audit head is read once and written once.
fn apply<'a>(db: &mut Connection, writes: impl Iterator<Item = &'a Write>) -> Result<()> {
    let tx = db.transaction()?;
    let mut head: Option<(i64, String)> = None;
    for w in writes {
        match w {
            Write::CallStarted { channel, tool, call_id, args_sha256, now_ms } => {
                tx.prepare_cached(
                    "INSERT INTO tool_calls (key_hash, channel_id, tool_id, tool_call_id, args_sha256, created_ms)
                     VALUES (?6, ?1, ?2, ?3, ?4, ?5)",
                )?
                .execute(params![
                    channel,
                    tool,
                    call_id,
                    pack_digest(args_sha256),
                    *now_ms as i64,
                    key_hash(channel, tool, call_id)
                ])?;
            }
            Write::CallFinished { channel, tool, call_id, outcome, now_ms } => {
                tx.prepare_cached(
                    // Appended beside the record, which stays as it was (migration 9: no page split).
                    "INSERT INTO tool_outcomes (id, outcome, finished_ms)
                     SELECT id, ?4, ?5 FROM tool_calls
                     WHERE key_hash = ?6 AND channel_id = ?1 AND tool_id = ?2 AND tool_call_id = ?3",
                )?
                .execute(params![
                    channel,
                    tool,
                    call_id,
                    pack_outcome(outcome),
                    *now_ms as i64,
                    key_hash(channel, tool, call_id)
                ])?;
            }
            Write::Audit { rec, hash } => {
                let (last, prev) = match head.take() {
                    Some(h) => h,
                    None => read_head(&tx)?,
                };
                let mut rec = rec.clone();
                rec.seq = last.checked_add(1).ok_or(rusqlite::Error::IntegralValueOutOfRange(0, last))?;
                rec.prev_hash = prev;
                rec.hash = hash(&rec);
                rows::insert(&tx, &rec)?;
                head = Some((rec.seq, rec.hash));
            }
        }
    }
    if let Some((seq, hash)) = head {
        tx.prepare_cached(
            "INSERT INTO audit_head (id, seq, hash) VALUES (1, ?1, ?2)
             ON CONFLICT(id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash",
        )?
        .execute(params![seq, hash])?;
    }
    tx.commit()
}

/// (seq, hash) the next record follows: the head is the last record ever appended (it survives pruning, so the
/// chain and the seqs continue across it); the newest record or the checkpoint stand in should the head be gone
/// (then `audit verify` reports it).
fn read_head(tx: &Transaction<'_>) -> Result<(i64, String)> {
    use rusqlite::OptionalExtension;
    let h: Option<String> = tx.query_row("SELECT hash FROM audit_head WHERE id = 1", [], |r| r.get(0)).optional()?;
    let last: i64 = tx
        .query_row(
            "SELECT MAX(s) FROM (SELECT seq AS s FROM audit_head UNION ALL SELECT MAX(seq) FROM audit
                             UNION ALL SELECT seq FROM audit_checkpoint)",
            [],
            |r| r.get::<_, Option<i64>>(0),
        )?
        .unwrap_or(0);
    Ok((last, h.unwrap_or_else(|| "0".repeat(64))))
}
