//! Can the connector still write its state and its file cache? The probe behind `/health`'s `failed` (held by
//! [`super::state::App`], read by `control.rs`).

/// Whether the connector can still write its state and its file cache, re-checked at most every
/// [`WriteHealth::EVERY`] for `/health`. A connector whose database stopped accepting writes refuses every
/// session (`internal_error`), so it must not report `ok`: SD cards fail into a read-only remount, a disk fills,
/// someone holds a lock on `connector.db`.
pub struct WriteHealth {
    store: Option<crate::store::Store>,
    data_dir: Option<std::path::PathBuf>,
    files_dir: std::path::PathBuf,
    last: std::sync::Mutex<Option<(std::time::Instant, Vec<Problem>)>>,
}

/// One reason `/health` is not `ok`.
#[derive(Clone, Debug)]
pub struct Problem {
    /// `failed`: sessions cannot work (503); `degraded`: some tools fail (200).
    pub fatal: bool,
    pub message: String,
}

impl WriteHealth {
    pub const EVERY: std::time::Duration = std::time::Duration::from_secs(5);
    /// Longest a probe may take before it counts as a failure (a held lock makes SQLite wait).
    const PROBE_DEADLINE: std::time::Duration = std::time::Duration::from_secs(2);

    /// `store: None` (in-memory state in tests) checks only the file cache.
    /// The file cache may live apart from the data dir (in memory by default), so both are named.
    pub fn new(
        store: Option<crate::store::Store>,
        data_dir: Option<std::path::PathBuf>,
        files_dir: std::path::PathBuf,
    ) -> WriteHealth {
        WriteHealth { store, data_dir, files_dir, last: std::sync::Mutex::new(None) }
    }

    /// The current problems (empty when healthy); probes on a blocking thread when the last result is stale.
    pub async fn problems(&self) -> Vec<Problem> {
        if let Some((at, p)) = &*self.last.lock().unwrap_or_else(|e| e.into_inner()) {
            if at.elapsed() < Self::EVERY {
                return p.clone();
            }
        }
        let (store, data_dir, files_dir) = (self.store.clone(), self.data_dir.clone(), self.files_dir.clone());
        let probe = tokio::task::spawn_blocking(move || probe(store.as_ref(), data_dir.as_deref(), &files_dir));
        let problems = match tokio::time::timeout(Self::PROBE_DEADLINE, probe).await {
            Ok(Ok(p)) => p,
            Ok(Err(_)) => vec![Problem { fatal: true, message: "the state probe failed unexpectedly".into() }],
            Err(_) => vec![Problem {
                fatal: true,
                message: format!(
                    "the state database did not take a write lock within {} s (another process holds it?)",
                    Self::PROBE_DEADLINE.as_secs()
                ),
            }],
        };
        for p in &problems {
            tracing::warn!(problem = %p.message, fatal = p.fatal, "health check");
        }
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some((std::time::Instant::now(), problems.clone()));
        problems
    }
}

fn probe(
    store: Option<&crate::store::Store>,
    data_dir: Option<&std::path::Path>,
    files_dir: &std::path::Path,
) -> Vec<Problem> {
    let mut out = Vec::new();
    if let Some(store) = store {
        if let Some((dir, Err(e))) = data_dir.map(|d| (d, crate::store::private::prove_writable(d))) {
            out.push(Problem { fatal: true, message: format!("the data dir {} is not writable: {e}", dir.display()) });
        }
        if let Err(e) = store.probe_write_lock() {
            out.push(Problem { fatal: true, message: format!("the state database does not accept writes: {e}") });
        }
    }
    if let Err(e) = crate::store::private::prove_writable(files_dir) {
        out.push(Problem {
            fatal: false,
            message: format!(
                "the file cache {} is not writable: {e} (screenshots, pulls and uploads fail)",
                files_dir.display()
            ),
        });
    }
    out
}
