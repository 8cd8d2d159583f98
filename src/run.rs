//! Wiring: store + registry + device backend → hub → server, plus signals. `main.rs` only parses and calls this;
//! tests call [`start`] to run a server in-process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::channels::{Hub, HubConfig};
use crate::cli::{exit, ConfigError};
use crate::device::Backend;
use crate::files::FileCache;
use crate::server::{self, App, ServerConfig, Tracker};
use crate::store::Store;
use crate::tools::Registry;

/// Everything `serve` needs, already validated.
pub struct ServeConfig {
    pub listen: SocketAddr,
    pub data_dir: Option<PathBuf>,
    pub api_key: Option<String>,
    pub allow_serials: Vec<String>,
    /// Operator labels per serial (policy file), for device matching at bind.
    pub labels: crate::channels::matching::Labels,
    pub lease_grace: Duration,
    pub max_message_bytes: usize,
    pub drain_timeout: Duration,
}

/// Transfer-plane settings (kept apart from [`ServeConfig`] so that embedders that do not care get the defaults
/// through [`start`]).
#[derive(Clone, Copy, Debug)]
pub struct TransferConfig {
    pub cache: crate::files::Limits,
    pub upload_max_bytes: u64,
}

impl Default for TransferConfig {
    fn default() -> Self {
        TransferConfig { cache: crate::files::Limits::default(), upload_max_bytes: 256 << 20 }
    }
}

/// A running server.
pub struct Running {
    pub addr: SocketAddr,
    pub hub: Arc<Hub>,
    shutdown: watch::Sender<bool>,
    done: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Starts the graceful shutdown and waits for it to complete.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let _ = self.done.await;
    }

    /// Waits until the server stops (after [`Running::trigger`] or forever).
    pub async fn wait(self) {
        let _ = self.done.await;
    }

    pub fn trigger(&self) -> watch::Sender<bool> {
        self.shutdown.clone()
    }
}

/// The production wiring: the ADB backend over the configured adb servers and the tool registry under the policy.
pub async fn start_adb(r: crate::cli::Resolved) -> Result<Running, ConfigError> {
    let adb = crate::device::adb::AdbBackend::new(r.adb_servers);
    let registry = Registry::device_tools_with(&adb, &Arc::new(r.policy));
    start_with(r.serve, r.transfer, registry, adb).await
}

/// Opens the state, binds the port and starts serving in background tasks, with default transfer settings.
pub async fn start(cfg: ServeConfig, registry: Registry, backend: Arc<dyn Backend>) -> Result<Running, ConfigError> {
    start_with(cfg, TransferConfig::default(), registry, backend).await
}

/// [`start`] with explicit transfer-plane settings.
pub async fn start_with(
    cfg: ServeConfig,
    transfer: TransferConfig,
    registry: Registry,
    backend: Arc<dyn Backend>,
) -> Result<Running, ConfigError> {
    let store = match &cfg.data_dir {
        Some(dir) => {
            crate::cli::prepare_data_dir(dir)?;
            Store::open(dir).map_err(|e| ConfigError {
                code: exit::CONFIG,
                message: format!("cannot open the state database in {}: {e}", dir.display()),
            })?
        }
        None => Store::open_in_memory().map_err(|e| ConfigError { code: exit::FAILURE, message: e.to_string() })?,
    };
    let hub_cfg = HubConfig {
        lease_grace: cfg.lease_grace,
        allow_serials: cfg.allow_serials.clone(),
        labels: cfg.labels.clone(),
        api_key_required: cfg.api_key.is_some(),
    };
    // Without a data dir (in-process tests) the cache lives in a private temporary directory.
    let files_dir = match &cfg.data_dir {
        Some(dir) => dir.join("files"),
        None => std::env::temp_dir().join(format!("xagent-adb-files-{}", crate::protocol::ids::random_hex(8))),
    };
    let files = FileCache::open(store.clone(), &files_dir, transfer.cache).map_err(|e| ConfigError {
        code: exit::CONFIG,
        message: format!("cannot open the file cache in {}: {e}", files_dir.display()),
    })?;
    registry.attach_files(&files);
    let hub = Hub::new(store, Arc::new(registry), backend, hub_cfg)
        .map_err(|m| ConfigError { code: exit::FAILURE, message: m })?;
    let listener = TcpListener::bind(cfg.listen).await.map_err(|e| ConfigError {
        code: exit::LISTEN,
        message: match e.kind() {
            std::io::ErrorKind::AddrInUse => format!(
                "cannot listen on {}: the address is already in use (is another connector running?); choose another with --listen",
                cfg.listen
            ),
            _ => format!("cannot listen on {}: {e}", cfg.listen),
        },
    })?;
    let addr = listener.local_addr().map_err(|e| ConfigError { code: exit::LISTEN, message: e.to_string() })?;
    if cfg.api_key.is_none() {
        tracing::warn!(
            "no system API key configured: /health, /ws and /files/uploads are open to anyone who can reach {addr}"
        );
    }
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let app = Arc::new(App {
        hub: hub.clone(),
        files: files.clone(),
        cfg: ServerConfig {
            api_key: cfg.api_key,
            max_message_bytes: cfg.max_message_bytes,
            outbound_queue: 256,
            drain_timeout: cfg.drain_timeout,
            max_connections: 1024,
            upload_max_bytes: transfer.upload_max_bytes,
        },
        shutdown: shutdown_rx.clone(),
        tasks: Tracker::default(),
        metrics: Arc::default(),
        tools_in_flight: Tracker::default(),
    });
    hub.backend().clone().start(shutdown_rx.clone());
    tokio::spawn(hub.clone().run_leases(shutdown_rx.clone()));
    tokio::spawn(hub.clone().watch_devices(shutdown_rx.clone()));
    tokio::spawn(files.run_sweeper(shutdown_rx.clone()));
    let scratch = cfg.data_dir.is_none().then(|| files_dir.clone());
    let done = tokio::spawn(async move {
        server::serve(listener, app).await;
        if let Some(dir) = scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
    });
    tracing::info!(%addr, card = crate::protocol::CONNECTOR_CARD_ID, version = crate::build_info::BUILD.version, "connector listening");
    Ok(Running { addr, hub, shutdown: shutdown_tx, done })
}

/// Resolves when SIGTERM or SIGINT arrives.
pub async fn signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("signal handler");
        tokio::select! { _ = ctrl_c => {}, _ = term.recv() => {} }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
