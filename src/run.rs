//! Wiring: store + registry + device backend → hub → server, plus signals. `main.rs` only parses and calls this;
//! tests call [`start`] to run a server in-process.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::channels::{Hub, HubConfig};
use crate::config::{exit, ConfigError, Resolved, ServeConfig, TransferConfig};
use crate::device::Backend;
use crate::files::FileCache;
use crate::server::{self, App, ServerConfig, Tracker};
use crate::store::Store;
use crate::tools::Registry;

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
pub async fn start_adb(r: Resolved) -> Result<Running, ConfigError> {
    warn_about_exposure(&r);
    let adb = crate::device::adb::AdbBackend::new(r.adb_servers);
    adb.configure_health(r.recovery, r.policy.health.clone());
    adb.set_capture_compression(r.capture_compression);
    adb.set_capture_streams_max(r.capture_streams);
    adb.conditions().configure(r.policy.lease_conditions.clone());
    adb.helpers().set_enabled(r.phone_helper);
    adb.helpers().set_owner(&r.serve.data_dir.as_deref().map(|p| p.display().to_string()).unwrap_or_default());
    let registry = Registry::device_tools_with(&adb, &Arc::new(r.policy));
    if let Some(url) = r.notify_url {
        registry.human().set_notify(url);
    }
    let mut wall = r.wall;
    wall.data_dir = r.serve.data_dir.clone();
    let running =
        start_inner(r.serve, r.transfer, registry, adb.clone(), crate::wall::Wall::new(wall, Some(adb.clone())))
            .await?;
    // Recovery steps go to the audit log like every device action (no channel: the connector acted by itself).
    let hub = Arc::downgrade(&running.hub);
    adb.set_audit(Arc::new(move |key, step, details, result| {
        if let Some(hub) = hub.upgrade() {
            // A lease's records name the channel whose lease it is (the last one bound to the phone).
            let channel = if step.starts_with("lease.") { hub.lease_channel(key, step) } else { None };
            hub.audit(channel.as_deref().unwrap_or(""), None, step, key, details, result);
        }
    }));
    persist_disconnects(&adb, running.hub.store());
    crate::device::conditions::set_ledger(&adb, Arc::new(StoreLedger(running.hub.store().clone())));
    Ok(running)
}

/// Lease conditions' old values live in the store until they are restored (`device::lease::Ledger`).
struct StoreLedger(Store);

impl crate::device::lease::Ledger for StoreLedger {
    fn record(&self, key: &crate::device::DeviceKey, rows: &[crate::device::lease::Recorded]) -> Result<(), String> {
        let rows: Vec<_> = rows.iter().map(|r| (r.namespace.clone(), r.name.clone(), r.old.clone())).collect();
        self.0.record_conditions(&key.server, &key.serial, &rows, crate::protocol::now_ms()).map_err(|e| e.to_string())
    }
    fn recorded(&self, key: &crate::device::DeviceKey) -> Result<Vec<crate::device::lease::Recorded>, String> {
        let rows = self.0.recorded_conditions(&key.server, &key.serial).map_err(|e| e.to_string())?;
        Ok(rows
            .into_iter()
            .map(|(namespace, name, old)| crate::device::lease::Recorded { namespace, name, old })
            .collect())
    }
    fn forget(&self, key: &crate::device::DeviceKey) -> Result<(), String> {
        self.0.forget_conditions(&key.server, &key.serial).map_err(|e| e.to_string())
    }
    fn forget_row(&self, key: &crate::device::DeviceKey, namespace: &str, name: &str) -> Result<(), String> {
        self.0.forget_condition(&key.server, &key.serial, namespace, name).map_err(|e| e.to_string())
    }
    fn phones(&self) -> Result<Vec<crate::device::DeviceKey>, String> {
        let rows = self.0.phones_with_conditions().map_err(|e| e.to_string())?;
        Ok(rows.into_iter().map(|(server, serial)| crate::device::DeviceKey { server, serial }).collect())
    }
}

/// Phones' disconnect times go to the store and the last hour's come back now, so "disconnects in the last hour"
/// (wall, API, metrics) survives a restart. A store error costs only that: logged, the count starts from zero.
fn persist_disconnects(adb: &crate::device::adb::AdbBackend, store: &Store) {
    use crate::device::health::{DISCONNECT_WINDOW, MAX_DISCONNECTS_KEPT, MAX_PHONES};
    use crate::device::DeviceKey;
    let window = u64::try_from(DISCONNECT_WINDOW.as_millis()).unwrap_or(u64::MAX);
    let (now, now_ms) = (std::time::Instant::now(), crate::protocol::now_ms());
    match store.recent_disconnects(now_ms.saturating_sub(window), MAX_PHONES.saturating_mul(MAX_DISCONNECTS_KEPT)) {
        Ok(rows) => {
            let mut by_phone: std::collections::BTreeMap<DeviceKey, Vec<u64>> = Default::default();
            for (server, serial, at_ms) in rows {
                by_phone.entry(DeviceKey { server, serial }).or_default().push(at_ms);
            }
            for (key, times) in by_phone {
                adb.health_book().restore_disconnects(&key, &times, now, now_ms);
            }
        }
        Err(e) => tracing::warn!(error = %e, "could not read the phones' recent disconnects; counting from zero"),
    }
    let store = store.clone();
    adb.health_book().set_persist(Arc::new(move |key, at_ms| {
        if let Err(e) =
            store.add_disconnect(&key.server, &key.serial, at_ms, at_ms.saturating_sub(window), MAX_DISCONNECTS_KEPT)
        {
            tracing::warn!(device = %key, error = %e, "could not record a disconnect");
        }
    }));
}

/// Start-up warnings for settings that work but expose something: a key file others can read (as `doctor`
/// says), and an adb server reached over the network — the adb server protocol has no authentication, so whoever
/// reaches that port controls every phone on it (use an SSH tunnel or WireGuard; docs/fleet.md).
fn warn_about_exposure(r: &Resolved) {
    if let Some(path) = &r.key_file {
        if let Some(mode) = crate::config::key_file_too_open(path) {
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
            crate::store::private::prepare_data_dir(dir)
                .map_err(|message| ConfigError { code: exit::CONFIG, message })?;
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
        audit: crate::audit::Settings {
            archive: cfg.data_dir.as_deref().map(crate::audit::archive::path),
            ..cfg.audit.clone()
        },
    };
    // Where the file cache lives (crate::files::Location): in memory by default, so that screenshots and observes
    // write nothing to persistent storage; its index is then an in-memory database of its own. Without a data dir
    // (in-process tests) it lives in a private temporary directory.
    let location = match &cfg.data_dir {
        Some(dir) => crate::files::Location::resolve(transfer.cache_dir.as_deref(), dir),
        None => crate::files::Location {
            dir: std::env::temp_dir().join(format!("xagent-adb-files-{}", crate::protocol::ids::random_hex(8))),
            volatile: true,
        },
    };
    let files_dir = location.dir.clone();
    let mut limits = transfer.cache;
    let index = if location.volatile {
        if let Some(dir) = &cfg.data_dir {
            let legacy = dir.join("files");
            if legacy != files_dir {
                crate::files::FileCache::retire(&store, &legacy).map_err(|e| ConfigError {
                    code: exit::CONFIG,
                    message: format!("cannot remove the old on-disk file cache {}: {e}", legacy.display()),
                })?;
            }
        }
        // Memory is RAM: half of the file system at most (a /run tmpfs is a fraction of a Pi's RAM).
        if let Some(size) = crate::files::fs_size(&files_dir).filter(|s| *s / 2 < limits.max_bytes) {
            // Expected under systemd on a Pi (/run is a fifth of the RAM): information, not a warning.
            tracing::info!(
                configured = limits.max_bytes,
                used = size / 2,
                fs_bytes = size,
                "--cache-max-bytes is more than half of the memory file system holding the cache; using half"
            );
            limits.max_bytes = size / 2;
        }
        Store::open_in_memory().map_err(|e| ConfigError { code: exit::FAILURE, message: e.to_string() })?
    } else {
        if cfg.data_dir.is_some() && transfer.cache_dir.is_none() {
            tracing::warn!(dir = %files_dir.display(), "no memory file system found ($RUNTIME_DIRECTORY, \
                $XDG_RUNTIME_DIR, /dev/shm): screenshots are cached on disk");
        }
        store.clone()
    };
    tracing::info!(dir = %files_dir.display(), volatile = location.volatile, max_bytes = limits.max_bytes,
                   "file cache location");
    let files = FileCache::open(index, &files_dir, limits).map_err(|e| ConfigError {
        code: exit::CONFIG,
        message: format!("cannot open the file cache in {}: {e}", files_dir.display()),
    })?;
    crate::store::private::prove_writable(&files_dir).map_err(|e| ConfigError {
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
    let listener = TcpListener::bind(cfg.listen).await.inspect_err(|_| {
        // A memory cache made for this run goes with it (nothing is in it yet).
        if location.volatile {
            let _ = std::fs::remove_dir_all(&files_dir);
        }
    });
    let listener = listener.map_err(|e| ConfigError {
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
        health: crate::server::writable::WriteHealth::new(store_for_health, cfg.data_dir.clone(), files_dir.clone()),
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
    // Read-only calls are counted in memory and appended to the audit chain at the latest every
    // `audit::reads::FLUSH_EVERY` (and on the other triggers `audit::reads` lists).
    let flusher = hub.clone();
    let mut flush_stop = shutdown_rx.clone();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(reads_flush_every());
        tick.tick().await;
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                _ = flush_stop.changed() => return,
            }
            let hub = flusher.clone();
            let _ = tokio::task::spawn_blocking(move || hub.flush_reads()).await;
        }
    });
    // A memory cache is emptied on the way out (its index is gone with the process); systemd removes /run's anyway.
    let scratch = location.volatile.then(|| files_dir.clone());
    let final_flush = hub.clone();
    let done = tokio::spawn(async move {
        server::serve(listener, app).await;
        // Graceful shutdown: the tools have drained, so the read counts are complete; into the chain with them.
        let _ = tokio::task::spawn_blocking(move || final_flush.flush_reads()).await;
        if let Some(dir) = scratch {
            let _ = std::fs::remove_dir_all(dir);
        }
    });
    tracing::info!(%addr, card = crate::protocol::CONNECTOR_CARD_ID, version = crate::build_info::BUILD.version, "connector listening");
    Ok(Running { addr, hub, shutdown: shutdown_tx, done })
}

/// How often read counts are flushed: [`crate::audit::reads::FLUSH_EVERY`]; tests shorten it with
/// `XAGENT_TEST_READS_FLUSH_MS` (honoured only in debug builds, so a release binary cannot be told to write more).
fn reads_flush_every() -> std::time::Duration {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("XAGENT_TEST_READS_FLUSH_MS").ok().and_then(|v| v.parse::<u64>().ok()) {
        return std::time::Duration::from_millis(ms.max(10));
    }
    crate::audit::reads::FLUSH_EVERY
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
