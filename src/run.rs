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
    /// Caps against hostile clients (sessions, channels, per-address connections, timeouts).
    pub limits: crate::server::Limits,
    /// Host names a browser may use for the wall when there is no key (`--allowed-host`).
    pub allowed_hosts: Vec<String>,
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
    warn_about_exposure(&r);
    let adb = crate::device::adb::AdbBackend::new(r.adb_servers);
    adb.set_capture_compression(r.capture_compression);
    let registry = Registry::device_tools_with(&adb, &Arc::new(r.policy));
    let mut wall = r.wall;
    wall.data_dir = r.serve.data_dir.clone();
    start_inner(r.serve, r.transfer, registry, adb.clone(), crate::wall::Wall::new(wall, Some(adb))).await
}

/// Start-up warnings for settings that work but expose something: a key file others can read (as `doctor`
/// says), and an adb server reached over the network — the adb server protocol has no authentication, so whoever
/// reaches that port controls every phone on it (use an SSH tunnel or WireGuard; README "Past one box").
fn warn_about_exposure(r: &crate::cli::Resolved) {
    if let Some(path) = &r.key_file {
        if let Some(mode) = crate::cli::key_file_too_open(path) {
            tracing::warn!(
                file = %path.display(),
                mode = format!("{mode:04o}"),
                "the API key file is readable by group/others; chmod 600 it"
            );
        }
    }
    for server in r.adb_servers.iter().filter(|s| !s.ip().is_loopback()) {
        tracing::warn!(
            %server,
            "adb server is not on loopback: the adb protocol has no authentication, anyone who reaches it controls \
             its phones; reach remote boxes through an SSH tunnel or WireGuard (README \"Past one box\")"
        );
    }
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
    let wall = crate::wall::Wall::new(crate::wall::WallConfig::default(), None);
    start_inner(cfg, transfer, registry, backend, wall).await
}

async fn start_inner(
    cfg: ServeConfig,
    transfer: TransferConfig,
    registry: Registry,
    backend: Arc<dyn Backend>,
    wall: Arc<crate::wall::Wall>,
) -> Result<Running, ConfigError> {
    let store = match &cfg.data_dir {
        Some(dir) => {
            crate::cli::prepare_data_dir(dir)?;
            let store = Store::open(dir).map_err(|e| ConfigError {
                code: exit::CONFIG,
                message: format!("cannot open the state database in {}: {e}", dir.display()),
            })?;
            // SQLite opens a file it may not write read-only without a word; only the first write fails, and then
            // every session would fail while /health said ok. Prove it now.
            store.probe_write().map_err(|e| ConfigError {
                code: exit::CONFIG,
                message: format!(
                    "the state database {} does not accept writes: {e}; it must belong to the user the connector \
                     runs as (e.g. `chown -R xagent-adb: {}` — was `doctor` or `serve` run as root before?)",
                    dir.join("connector.db").display(),
                    dir.display()
                ),
            })?;
            store
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
    crate::cli::prove_writable(&files_dir).map_err(|e| ConfigError {
        code: exit::CONFIG,
        message: format!(
            "the file cache {} is not writable: {e}; it must belong to the user the connector runs as",
            files_dir.display()
        ),
    })?;
    registry.attach_files(&files);
    let store_for_health = cfg.data_dir.is_some().then(|| store.clone());
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
    wall.listening_on(addr.port());
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
            limits: cfg.limits,
            allowed_hosts: cfg.allowed_hosts,
        },
        shutdown: shutdown_rx.clone(),
        tasks: Tracker::default(),
        metrics: Arc::default(),
        tools_in_flight: Tracker::default(),
        channel_slots: Default::default(),
        sessions: Arc::new(tokio::sync::Semaphore::new(cfg.limits.max_sessions)),
        per_ip: Default::default(),
        health: crate::server::control::WriteHealth::new(store_for_health, files_dir.clone()),
        wall,
        auth: Default::default(),
    });
    hub.backend().clone().start(shutdown_rx.clone());
    tokio::spawn(hub.clone().run_leases(shutdown_rx.clone()));
    tokio::spawn(hub.clone().watch_devices(shutdown_rx.clone()));
    tokio::spawn(files.run_sweeper(shutdown_rx.clone()));
    // Expired observations go even when their channel never observes again (`tools::observe::sweep`).
    tokio::spawn(async {
        let every = (crate::tools::observe::ttl() / 4).max(std::time::Duration::from_millis(100));
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            crate::tools::observe::sweep();
        }
    });
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
