//! The hub itself: the state and its core transitions (hello, channels, descriptors, leases, audit), shared by
//! the flows beside it (`auth.rs` binds, `takeover.rs` holds); they reach its maps through the `pub(super)` fields.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::{mpsc, Notify};

use super::holds::Takeovers;
use crate::device::{Backend, DeviceKey, DeviceState};
use crate::protocol::card::{self, Card};
use crate::protocol::descriptor::{ConnStatus, Connection, DescTarget, Descriptor, Permission, ToolAvail, ToolStatus};
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::packet::{obj, Packet};
use crate::protocol::{self as proto, ids, now_ms};
use crate::store::Store;
use crate::tools::Registry;

/// The device a channel is bound to.
pub type Binding = DeviceKey;

/// Identifies one WebSocket connection.
pub type SocketId = u64;

/// Where packets for a socket go: its bounded outbound queue (drained by the socket's writer task).
pub type Outbound = mpsc::Sender<Packet>;

pub struct HubConfig {
    /// §8.2 reconnect grace; one hour in production, shorter in tests.
    pub lease_grace: Duration,
    /// Operator allowlist of serials that may be bound (empty = all).
    pub allow_serials: Vec<String>,
    /// Operator labels per serial (policy file): what the `labels` constraint of a bind matches.
    pub labels: crate::policy::Labels,
    pub api_key_required: bool,
    /// The audit log's record cap, retention, per-channel budget and archive (`--audit-*`).
    pub audit: crate::audit::Settings,
}

struct Instance {
    profiles: Vec<String>,
    sockets: HashSet<SocketId>,
    /// Unix ms at which the instance is unregistered unless a hello resumes it.
    lease_expires_ms: Option<u64>,
}

pub(super) struct Channel {
    connector_id: String,
    open_on: Option<SocketId>,
    pub(super) binding: Option<Binding>,
    /// An auth session waiting for the person to approve the device (descriptor: `authenticating`).
    pub(super) pending_auth: Option<String>,
    /// Who holds the channel when it is not xAgent (an MCP session: `MCP: <client> <version>`, already cleaned and
    /// bounded by its setter); in memory only, like the MCP session itself.
    client: Option<String>,
}

struct Socket {
    tx: Outbound,
    connector_id: Option<String>,
}

#[derive(Default)]
pub(super) struct Inner {
    instances: HashMap<String, Instance>,
    pub(super) channels: HashMap<String, Channel>,
    sockets: HashMap<SocketId, Socket>,
    next_socket: SocketId,
}

pub struct Hub {
    pub(super) store: Store,
    calls: crate::idempotency::Calls,
    /// Read-only calls counted in memory until they go into the audit chain (`audit::reads`).
    reads: crate::audit::reads::Reads,
    /// Which side effects get a record of their own, and whether the log is full (`audit::budget`).
    evidence: crate::audit::budget::Evidence,
    registry: Arc<Registry>,
    pub(super) backend: Arc<dyn Backend>,
    pub(super) cfg: HubConfig,
    pub(super) card: Card,
    inner: Mutex<Inner>,
    /// Phones an operator has taken over from the device wall (`takeover.rs`).
    pub(super) takeovers: Takeovers,
    /// Wakes the lease task when a deadline is added or removed.
    lease_changed: Notify,
    /// Each channel's calls under its binding, cut when the binding ends (`work.rs`).
    pub(super) works: super::tickets::Works,
    /// The last channel whose binding of each phone ended (since this process started): the channel of the
    /// device layer's release records, which come after the binding is gone (`Hub::lease_channel`).
    last_holder: Mutex<HashMap<DeviceKey, String>>,
}

/// Result of a successful hello.
pub struct HelloOk {
    pub connector_id: String,
}

pub(super) fn internal(e: impl std::fmt::Display) -> ProtoError {
    tracing::error!(error = %e, "state store failure");
    ProtoError::new(ErrorCode::Internal, "the connector's state store failed; see the connector log")
}

impl Hub {
    /// Builds the hub and restores persisted instances and channels. Restored instances have no socket, so each
    /// gets a lease (its persisted one if it was already counting down).
    pub fn new(
        store: Store,
        registry: Arc<Registry>,
        backend: Arc<dyn Backend>,
        cfg: HubConfig,
    ) -> Result<Arc<Hub>, String> {
        let card = Self::build_card(&registry, backend.as_ref(), cfg.api_key_required);
        let errs = card::validate(&card, proto::SKILL_NAME);
        if !errs.is_empty() {
            return Err(format!("the connector card is invalid: {}", errs.join("; ")));
        }
        let mut inner = Inner { next_socket: 1, ..Inner::default() };
        let now = now_ms();
        let grace_ms = cfg.lease_grace.as_millis() as u64;
        for row in store.instances().map_err(|e| e.to_string())? {
            let expires = row.lease_expires_ms.unwrap_or(now + grace_ms);
            store.set_lease(&row.connector_id, Some(expires)).map_err(|e| e.to_string())?;
            inner.instances.insert(
                row.connector_id,
                Instance { profiles: row.profiles, sockets: HashSet::new(), lease_expires_ms: Some(expires) },
            );
        }
        for row in store.channels().map_err(|e| e.to_string())? {
            let binding = row.binding.map(|(server, serial)| DeviceKey { server, serial });
            if let Some(k) = &binding {
                backend.keep_key(k); // the phone keeps this key even when another of its paths is seen first
                backend.lease_continues(k); // its lease conditions stay until this binding is released
            }
            inner.channels.insert(
                row.channel_id,
                Channel { connector_id: row.connector_id, open_on: None, binding, pending_auth: None, client: None },
            );
        }
        Ok(Arc::new(Hub {
            calls: crate::idempotency::Calls::new(store.clone()),
            reads: Default::default(),
            evidence: crate::audit::budget::Evidence::new(cfg.audit.clone()),
            store,
            registry,
            backend,
            cfg,
            card,
            inner: Mutex::new(inner),
            takeovers: Takeovers::default(),
            lease_changed: Notify::new(),
            works: Default::default(),
            last_holder: Mutex::default(),
        }))
    }

    pub fn build_card(registry: &Registry, backend: &dyn Backend, api_key_required: bool) -> Card {
        Card {
            schema: proto::CARD_SCHEMA,
            protocol_version: proto::PROTOCOL_VERSION,
            build: crate::build_info::BUILD,
            connector_card_id: proto::CONNECTOR_CARD_ID,
            connector: card::ConnectorInfo {
                name: "xAgent ADB Connector",
                version: env!("CARGO_PKG_VERSION"),
                vendor: "xagent-adb-connector",
                description: "Drive Android phones attached to this box over ADB: observe the screen and UI, \
                              tap, swipe, type, press keys and manage apps, one bound phone per channel.",
            },
            supports: card::Supports {
                user_channel_mode: "multiple",
                target_types: vec![proto::TARGET_TYPE],
                targets: vec![card::Target {
                    target_type: proto::TARGET_TYPE,
                    provider: proto::PROVIDER,
                    label: proto::TARGET_LABEL,
                    description: Some("An Android phone reachable through an adb server next to the connector."),
                }],
                profiles: vec![proto::DEVICE_PROFILE],
            },
            tools: registry.declarations(),
            auth_flows: backend.auth_flows(),
            security: card::Security {
                trust_level: "local",
                api_key_required,
                data_classes: vec!["device_state", "screen_image", "ui_hierarchy", "app_list", "device_log"],
            },
        }
    }

    pub fn card(&self) -> &Card {
        &self.card
    }

    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }

    /// Appends a device action to the audit log (the channel's connector instance is filled in here).
    pub fn audit(
        &self,
        channel_id: &str,
        tool_call_id: Option<&str>,
        tool_id: &str,
        device: &DeviceKey,
        args: &Map<String, Value>,
        result: &str,
    ) {
        if let Err(e) = self.store.commit(self.audit_entry(channel_id, tool_call_id, tool_id, device, args, result)) {
            tracing::error!(error = %e, "could not append to the audit log");
        }
    }

    /// The audit write of [`Hub::audit`], to commit together with the call's idempotency record.
    pub fn audit_entry(
        &self,
        channel_id: &str,
        tool_call_id: Option<&str>,
        tool_id: &str,
        device: &DeviceKey,
        args: &Map<String, Value>,
        result: &str,
    ) -> crate::store::group::Write {
        let connector_id = self.lock().channels.get(channel_id).map(|c| c.connector_id.clone()).unwrap_or_default();
        crate::audit::entry(crate::audit::Action {
            connector_id: &connector_id,
            channel_id,
            tool_call_id,
            tool_id,
            device: &device.to_string(),
            args,
            result,
        })
    }

    /// Counts a finished read-only call in memory (`audit::reads`): nothing is written now. Should the count
    /// table be full, the call's record is committed at once instead.
    pub fn count_read(&self, channel_id: &str, tool_id: &str, device: &DeviceKey, outcome: &str) {
        let connector_id = self.lock().channels.get(channel_id).map(|c| c.connector_id.clone()).unwrap_or_default();
        let now = now_ms();
        if let Some(w) = self.reads.count(&connector_id, channel_id, &device.to_string(), tool_id, outcome, now) {
            if let Err(e) = self.store.commit(w) {
                tracing::error!(error = %e, "could not append to the audit log");
            }
        }
    }

    /// Counts a side-effecting call that sent the phone nothing (`audit::reads::REFUSED_MARKER`), as
    /// [`Hub::count_read`] counts a read: a flood of refused calls writes no record per call.
    pub fn count_refused(&self, channel_id: &str, tool_id: &str, device: &DeviceKey, outcome: &str) {
        let connector_id = self.lock().channels.get(channel_id).map(|c| c.connector_id.clone()).unwrap_or_default();
        let now = now_ms();
        if let Some(w) = self.reads.count_refused(&connector_id, channel_id, &device.to_string(), tool_id, outcome, now)
        {
            if let Err(e) = self.store.commit(w) {
                tracing::error!(error = %e, "could not append to the audit log");
            }
        }
    }

    /// The audit write of an agent's side effect that ran (`audit::budget`): its own record (`Some`, to commit with
    /// the call's idempotency record and the pending read counts), or `None` when it was counted instead — a
    /// repeat of one of the channel's recent recorded actions, a channel past its budget, a full log.
    #[allow(clippy::too_many_arguments)]
    pub fn side_effect_entry(
        &self,
        channel_id: &str,
        tool_call_id: Option<&str>,
        tool_id: &str,
        device: &DeviceKey,
        args: &Map<String, Value>,
        result: &str,
    ) -> Option<crate::store::group::Write> {
        use crate::audit::budget::Decision;
        let connector_id = self.lock().channels.get(channel_id).map(|c| c.connector_id.clone()).unwrap_or_default();
        let device = device.to_string();
        let redacted = crate::audit::redact(args);
        let signature = format!("{device}\u{0}{tool_id}\u{0}{redacted}\u{0}{result}");
        let now = now_ms();
        let counted = match self.evidence.decide(channel_id, &signature, now) {
            Decision::Record => {
                if self.evidence.prune_due() {
                    self.lease_changed.notify_one();
                }
                return Some(crate::audit::entry(crate::audit::Action {
                    connector_id: &connector_id,
                    channel_id,
                    tool_call_id,
                    tool_id,
                    device: &device,
                    args,
                    result,
                }));
            }
            Decision::Repeated => Some(redacted.as_str()),
            Decision::OverBudget => None,
        };
        let w = self.reads.count_side_effect(&connector_id, channel_id, &device, tool_id, counted, result, now)?;
        // The count table is full: this call's count is its own record now.
        if let Err(e) = self.store.commit(w) {
            tracing::error!(error = %e, "could not append to the audit log");
        }
        None
    }

    /// Whether the audit log is full (`audit::budget`): `/health` says so.
    pub fn audit_full(&self) -> bool {
        self.evidence.is_full()
    }

    /// The pending read counts as audit writes, to commit with the caller's own (see `audit::reads`); give them
    /// back with [`Hub::restore_reads`] if that commit fails.
    pub fn take_reads(&self) -> Vec<crate::store::group::Write> {
        self.reads.take()
    }

    pub fn restore_reads(&self, writes: Vec<crate::store::group::Write>) {
        self.reads.restore(writes)
    }

    /// Commits the pending read counts now (blocking: call it from a blocking thread).
    pub fn flush_reads(&self) {
        let writes = self.reads.take();
        if writes.is_empty() {
            return;
        }
        let n = writes.len();
        let copy = writes.clone();
        match self.store.commit_all(writes) {
            Ok(()) => tracing::debug!(records = n, "read calls appended to the audit log"),
            Err(e) => {
                tracing::error!(error = %e, "could not append read calls to the audit log; kept for the next flush");
                self.reads.restore(copy);
            }
        }
    }

    /// [`Hub::flush_reads`] on a blocking thread when called inside the runtime (a channel or socket closing),
    /// else right here.
    pub fn flush_reads_soon(self: &Arc<Self>) {
        if self.reads.is_empty() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                let hub = self.clone();
                rt.spawn_blocking(move || hub.flush_reads());
            }
            Err(_) => self.flush_reads(),
        }
    }

    /// Idempotency records of side-effecting tool calls.
    pub fn calls(&self) -> &crate::idempotency::Calls {
        &self.calls
    }

    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ---- sockets ---------------------------------------------------------------------------------------------

    pub fn register_socket(&self, tx: Outbound) -> SocketId {
        let mut inner = self.lock();
        let id = inner.next_socket;
        inner.next_socket += 1;
        inner.sockets.insert(id, Socket { tx, connector_id: None });
        id
    }

    /// The socket is gone: close its channel routes; if it was the instance's last authenticated socket, start the
    /// lease (§8.2 "当前 connector_id 的全部已认证 data plane 断开后 ... 保留一小时重连保护期").
    pub fn socket_closed(&self, socket: SocketId) {
        let mut inner = self.lock();
        let Some(sock) = inner.sockets.remove(&socket) else { return };
        for ch in inner.channels.values_mut() {
            if ch.open_on == Some(socket) {
                ch.open_on = None;
            }
        }
        let Some(cid) = sock.connector_id else { return };
        let expires = now_ms() + self.cfg.lease_grace.as_millis() as u64;
        if let Some(inst) = inner.instances.get_mut(&cid) {
            inst.sockets.remove(&socket);
            if inst.sockets.is_empty() {
                inst.lease_expires_ms = Some(expires);
                if let Err(e) = self.store.set_lease(&cid, Some(expires)) {
                    tracing::error!(error = %e, "could not persist the connector lease");
                }
                tracing::info!(connector_id = %cid, grace_s = self.cfg.lease_grace.as_secs(), "last data plane of the instance closed; lease started");
                drop(inner);
                self.lease_changed.notify_one();
            }
        }
    }

    // ---- hello -----------------------------------------------------------------------------------------------

    /// `connector.hello` (§8.1). Validation order follows the text: card id, version, profiles, then identity.
    pub fn hello(&self, socket: SocketId, payload: &Map<String, Value>) -> Result<HelloOk, ProtoError> {
        let card_id = payload.get("connector_card_id").and_then(Value::as_str).unwrap_or("");
        if card_id != proto::CONNECTOR_CARD_ID {
            return Err(ProtoError::new(
                ErrorCode::ConnectorCardIdMismatch,
                format!(
                    "hello connector_card_id {card_id:?} does not match this connector ({})",
                    proto::CONNECTOR_CARD_ID
                ),
            ));
        }
        let version = payload.get("protocol_version").and_then(Value::as_str).unwrap_or("");
        match proto::compare_versions(version, proto::PROTOCOL_VERSION) {
            Some(std::cmp::Ordering::Less) | None => {
                return Err(ProtoError::new(
                    ErrorCode::ProtocolVersionUnsupported,
                    format!(
                        "hello protocol_version {version:?} is missing or below {}; this connector has no older wire",
                        proto::PROTOCOL_VERSION
                    ),
                ))
            }
            _ => {}
        }
        let Some(Value::Array(supported)) = payload.get("supported_profiles") else {
            return Err(ProtoError::new(
                ErrorCode::InvalidPacket,
                "hello must carry supported_profiles (an array of profile ids); there is no fallback",
            ));
        };
        if supported.iter().any(|v| !v.is_string()) {
            return Err(ProtoError::new(ErrorCode::InvalidPacket, "hello supported_profiles must be strings"));
        }
        let profiles: Vec<String> = self
            .card
            .supports
            .profiles
            .iter()
            .filter(|p| supported.iter().any(|s| s.as_str() == Some(p)))
            .map(|p| p.to_string())
            .collect();
        if profiles.is_empty() {
            return Err(ProtoError::new(
                ErrorCode::ProfileNotSupported,
                format!(
                    "xAgent supports none of this connector's profiles ({})",
                    self.card.supports.profiles.join(", ")
                ),
            ));
        }
        let requested = payload.get("connector_id").and_then(Value::as_str).filter(|s| !s.is_empty());

        let mut inner = self.lock();
        let current = inner.sockets.get(&socket).and_then(|s| s.connector_id.clone());
        if let (Some(cur), Some(req)) = (&current, requested) {
            if cur != req {
                return Err(ProtoError::new(
                    ErrorCode::ConnectorIdMismatch,
                    "this data plane already said hello with another connector_id",
                ));
            }
        }
        // Resume the requested instance when we know it, else keep the socket's own, else issue a new id
        // (§8.1: "服务端状态已重建时允许重新签发").
        let connector_id = requested
            .filter(|r| inner.instances.contains_key(*r))
            .map(str::to_owned)
            .or(current)
            .unwrap_or_else(ids::connector_id);
        self.store.upsert_instance(&connector_id, &profiles, now_ms()).map_err(internal)?;
        let inst = inner.instances.entry(connector_id.clone()).or_insert_with(|| Instance {
            profiles: Vec::new(),
            sockets: HashSet::new(),
            lease_expires_ms: None,
        });
        inst.profiles = profiles;
        inst.sockets.insert(socket);
        let resumed = inst.lease_expires_ms.take().is_some();
        if let Some(s) = inner.sockets.get_mut(&socket) {
            s.connector_id = Some(connector_id.clone());
        }
        drop(inner);
        if resumed {
            tracing::info!(connector_id = %connector_id, "hello resumed the instance; lease cancelled");
            self.lease_changed.notify_one();
        }
        Ok(HelloOk { connector_id })
    }

    pub fn socket_connector(&self, socket: SocketId) -> Option<String> {
        self.lock().sockets.get(&socket).and_then(|s| s.connector_id.clone())
    }

    // ---- channels --------------------------------------------------------------------------------------------

    /// `channel.open` (§8.3): restore a channel of this instance by id, or allocate a new one. A channel of another
    /// instance is never handed over (it may hold another tenant's device); an unknown id gets a new channel.
    pub fn open_channel(&self, socket: SocketId, requested: Option<&str>) -> Result<(String, Descriptor), ProtoError> {
        let mut inner = self.lock();
        let connector_id = inner.sockets.get(&socket).and_then(|s| s.connector_id.clone()).ok_or_else(|| {
            ProtoError::new(ErrorCode::HelloRequired, "connector.hello must complete before channel.open")
        })?;
        let reuse = requested.filter(|id| inner.channels.get(*id).is_some_and(|c| c.connector_id == connector_id));
        let channel_id = match reuse {
            Some(id) => id.to_owned(),
            None => {
                let id = ids::channel_id();
                self.store.insert_channel(&id, &connector_id, now_ms()).map_err(internal)?;
                inner.channels.insert(
                    id.clone(),
                    Channel { connector_id, open_on: None, binding: None, pending_auth: None, client: None },
                );
                id
            }
        };
        if let Some(ch) = inner.channels.get_mut(&channel_id) {
            ch.open_on = Some(socket);
        }
        let d = self.descriptor_locked(&inner, &channel_id).expect("channel exists");
        Ok((channel_id, d))
    }

    /// `channel.close` (§8.5): closes the route only; the binding stays.
    pub fn close_channel(&self, channel_id: &str) {
        if let Some(ch) = self.lock().channels.get_mut(channel_id) {
            ch.open_on = None;
        }
    }

    /// Every user-level packet names a channel that exists, belongs to this socket's instance and is open on this
    /// socket (§8.18 "Connector 必须拒绝 envelope 中缺少、无归属、Connector 不匹配或不可用的 Channel").
    pub fn check_channel(&self, socket: SocketId, channel_id: Option<&str>) -> Result<String, ProtoError> {
        let id = channel_id.filter(|s| !s.is_empty()).ok_or_else(|| {
            ProtoError::new(
                ErrorCode::ConnectorChannelIdRequired,
                "user-level packets need an envelope connector_channel_id",
            )
        })?;
        if !id.starts_with(ids::CHANNEL_PREFIX) {
            return Err(ProtoError::new(
                ErrorCode::ConnectorChannelConnectorMismatch,
                format!("{id:?} was not issued by connector card {}", proto::CONNECTOR_CARD_ID),
            ));
        }
        let inner = self.lock();
        let ch = inner
            .channels
            .get(id)
            .ok_or_else(|| ProtoError::new(ErrorCode::ConnectionNotFound, format!("channel {id} does not exist")))?;
        let mine = inner.sockets.get(&socket).and_then(|s| s.connector_id.as_deref());
        if mine != Some(ch.connector_id.as_str()) {
            return Err(ProtoError::new(
                ErrorCode::ConnectorChannelNotOwned,
                format!("channel {id} belongs to another connector instance"),
            ));
        }
        if ch.open_on != Some(socket) {
            return Err(ProtoError::new(
                ErrorCode::ChannelNotOpen,
                format!("channel {id} is not open on this data plane; send channel.open first"),
            ));
        }
        Ok(id.to_owned())
    }

    /// Whether `channel_id` is a channel of this connector (open or waiting for its instance to reconnect); used by
    /// the transfer plane to bind uploads.
    pub fn channel_exists(&self, channel_id: &str) -> bool {
        self.lock().channels.contains_key(channel_id)
    }

    /// Whether the operator's allowlist (today's, which may be narrower than when the binding was made) admits
    /// this device.
    /// A phone on several paths is admitted when the list names any of its serials.
    pub fn device_allowed(&self, key: &DeviceKey) -> bool {
        self.cfg.allow_serials.is_empty()
            || self.backend.aliases(key).iter().any(|s| self.cfg.allow_serials.contains(s))
    }

    /// The channel a `lease.*` record of the device layer about `key` belongs to: the conditions set at a bind
    /// (`lease.conditions.set`) are the new holder's; a release and its restore come after the binding ended and
    /// are the last released channel's (the holder's, when none was released since start).
    pub fn lease_channel(&self, key: &DeviceKey, step: &str) -> Option<String> {
        let holder =
            || self.lock().channels.iter().find(|(_, c)| c.binding.as_ref() == Some(key)).map(|(id, _)| id.clone());
        if step == "lease.conditions.set" {
            return holder();
        }
        self.last_holder.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned().or_else(holder)
    }

    pub(super) fn set_last_holder(&self, key: &DeviceKey, channel_id: &str) {
        self.last_holder.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone(), channel_id.to_owned());
    }

    pub fn binding(&self, channel_id: &str) -> Option<Binding> {
        self.lock().channels.get(channel_id).and_then(|c| c.binding.clone())
    }

    // ---- descriptors -----------------------------------------------------------------------------------------

    pub fn descriptor(&self, channel_id: &str) -> Option<Descriptor> {
        self.descriptor_locked(&self.lock(), channel_id)
    }

    fn descriptor_locked(&self, inner: &Inner, channel_id: &str) -> Option<Descriptor> {
        let ch = inner.channels.get(channel_id)?;
        let profiles = inner.instances.get(&ch.connector_id).map(|i| i.profiles.clone()).unwrap_or_default();
        let info = ch.binding.as_ref().map(|b| (b, self.backend.info(b)));
        let named = |model: &str, serial: &str| format!("{model} ({})", mask_serial(serial));
        let (status, reason, display_name, hint) = match &info {
            None if ch.pending_auth.is_some() => (
                ConnStatus::Authenticating,
                Some("waiting for the USB debugging prompt to be accepted on the phone".to_owned()),
                "Android device (waiting for authorisation)".to_owned(),
                None,
            ),
            None => (
                ConnStatus::Created,
                Some("no device bound: run auth flow adb_device".to_owned()),
                "No Android device bound".to_owned(),
                None,
            ),
            Some((b, d)) if !self.device_allowed(b) => {
                let model = d.as_ref().map_or("Android device", |d| d.model.as_str());
                let why = "permission_denied: the operator's allowlist no longer includes this device";
                (ConnStatus::Offline, Some(why.to_owned()), named(model, &b.serial), Some(mask_serial(&b.serial)))
            }
            Some((b, Some(d))) if d.state == DeviceState::Online => {
                (ConnStatus::Connected, None, named(&d.model, &b.serial), Some(mask_serial(&b.serial)))
            }
            Some((b, d)) => {
                let state = d.as_ref().map_or(DeviceState::Gone, |d| d.state);
                let model = d.as_ref().map_or("Android device", |d| d.model.as_str());
                let why = match state {
                    DeviceState::Unauthorized => "device_unauthorized: accept the USB debugging prompt on the phone",
                    DeviceState::Offline => {
                        "device_offline: the adb server reports the device offline, or it has not answered a probe yet"
                    }
                    _ => "device_offline: the device is not connected to any adb server",
                };
                (ConnStatus::Offline, Some(why.to_owned()), named(model, &b.serial), Some(mask_serial(&b.serial)))
            }
        };
        let unauthorized =
            info.as_ref().and_then(|(_, d)| d.as_ref()).is_some_and(|d| d.state == DeviceState::Unauthorized);
        let (avail, perm) = match status {
            ConnStatus::Connected => (ToolAvail::Available, Permission::Granted),
            // The phone withdrew this host's authorisation: it must be approved again on the phone.
            _ if unauthorized => (ToolAvail::RequiresReauth, Permission::RequiresReauth),
            ConnStatus::Created | ConnStatus::Authenticating => (ToolAvail::Unavailable, Permission::Unknown),
            _ => (ToolAvail::Unavailable, Permission::Granted),
        };
        Some(Descriptor {
            schema: proto::DESCRIPTOR_SCHEMA,
            connection: Connection {
                connector_card_id: proto::CONNECTOR_CARD_ID,
                connector_id: ch.connector_id.clone(),
                connector_channel_id: channel_id.to_owned(),
                target_type: proto::TARGET_TYPE,
                profiles,
                status,
            },
            target: DescTarget {
                provider: proto::PROVIDER,
                label: proto::TARGET_LABEL,
                display_name,
                account_hint: hint,
            },
            tools: self
                .registry
                .ids()
                .map(|id| ToolStatus {
                    tool_id: id.to_owned(),
                    status: avail,
                    target_permission_state: perm,
                    reason: reason.clone(),
                })
                .collect(),
        })
    }

    /// Sends `connection.descriptor.push` (§8.17) for `channel_id` if it is open on a socket.
    pub fn push_descriptor(&self, channel_id: &str) {
        let inner = self.lock();
        let Some(ch) = inner.channels.get(channel_id) else { return };
        let Some(tx) = ch.open_on.and_then(|s| inner.sockets.get(&s)).map(|s| s.tx.clone()) else { return };
        let Some(d) = self.descriptor_locked(&inner, channel_id) else { return };
        drop(inner);
        let pkt = Packet::push(
            "connection.descriptor.push",
            Some(channel_id),
            obj([("connection_descriptor", to_value(&d))]),
        );
        // Descriptor pushes are state, not noise: when the queue is full they wait for space instead of being
        // dropped (on a task, so the caller never blocks on a slow peer).
        if let Err(mpsc::error::TrySendError::Full(pkt)) = tx.try_send(pkt) {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(async move {
                    let _ = tx.send(pkt).await;
                });
            }
        }
    }

    /// A device changed state: correct the descriptor of every channel bound to it, at once (profile: "push it,
    /// don't wait to be polled").
    pub fn device_changed(&self, key: &DeviceKey) {
        let bound: Vec<String> = self
            .lock()
            .channels
            .iter()
            .filter(|(_, c)| c.binding.as_ref() == Some(key))
            .map(|(id, _)| id.clone())
            .collect();
        for id in bound {
            self.push_descriptor(&id);
        }
    }

    /// Runs until `shutdown` fires: forwards device state changes to descriptor pushes.
    pub async fn watch_devices(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let mut rx = self.backend.subscribe();
        loop {
            tokio::select! {
                _ = shutdown.changed() => return,
                msg = rx.recv() => match msg {
                    Ok(key) => self.device_changed(&key),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        // Missed some: re-push every bound channel rather than guess which.
                        let keys: HashSet<DeviceKey> = self.lock().channels.values().filter_map(|c| c.binding.clone()).collect();
                        for k in keys { self.device_changed(&k); }
                    }
                    Err(_) => return,
                }
            }
        }
    }

    // ---- lease -----------------------------------------------------------------------------------------------

    /// Unregisters every instance whose lease ran out, each channel through its own cleanup path (its calls cut
    /// first: [`Hub::end_lease`]). Returns the ids of the instances removed.
    pub async fn expire_leases(&self, now: u64) -> Vec<String> {
        let expired: Vec<String> = self
            .lock()
            .instances
            .iter()
            .filter(|(_, i)| i.lease_expires_ms.is_some_and(|t| t <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for cid in &expired {
            let channels: Vec<String> =
                self.lock().channels.iter().filter(|(_, c)| &c.connector_id == cid).map(|(id, _)| id.clone()).collect();
            for ch in channels {
                self.end_lease(&ch, "lease_expired", |h| h.cleanup_channel(&ch)).await;
            }
            if let Err(e) = self.store.delete_instance(cid) {
                tracing::error!(error = %e, connector_id = %cid, "could not delete the expired instance");
            }
            self.lock().instances.remove(cid);
            tracing::info!(connector_id = %cid, "connector instance unregistered after its lease expired");
        }
        expired
    }

    /// Unregisters one channel: releases its device binding, drops its auth sessions, forgets it. This is the
    /// governance path of §8.2, distinct from `channel.close` (which keeps everything).
    pub fn cleanup_channel(&self, channel_id: &str) {
        let removed = self.lock().channels.remove(channel_id);
        if let Err(e) = self.store.delete_channel(channel_id) {
            tracing::error!(error = %e, channel = %channel_id, "could not delete the channel");
        }
        if let Some(key) = removed.and_then(|c| c.binding) {
            self.set_last_holder(&key, channel_id);
            self.backend.released(&key);
            tracing::info!(channel = %channel_id, device = %key, "binding released");
        }
    }

    fn next_lease_deadline(&self) -> Option<u64> {
        self.lock().instances.values().filter_map(|i| i.lease_expires_ms).min()
    }

    /// Runs until `shutdown` fires: sleeps until the earliest lease deadline and expires what is due.
    pub async fn run_leases(self: Arc<Self>, mut shutdown: tokio::sync::watch::Receiver<bool>) {
        let mut last_prune: Option<std::time::Instant> = None;
        loop {
            self.expire_leases(now_ms()).await;
            // Retention of idempotency records, auth sessions and the audit log: at most once a minute (lease
            // events can come in bursts) and on a blocking thread (large deletes must not stall an async worker).
            // Sooner when a tenth of the record cap was appended since (`audit::budget`: the cap must not lag a flood).
            if last_prune.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) || self.evidence.prune_due() {
                last_prune = Some(std::time::Instant::now());
                let hub = self.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    hub.calls.prune();
                    if let Err(e) = hub.store.prune_auth_sessions(now_ms().saturating_sub(3_600_000)) {
                        tracing::warn!(error = %e, "could not prune old auth sessions");
                    }
                    crate::audit::prune(&hub.store, &hub.evidence);
                })
                .await;
            }
            // Wake at least every 10 minutes for the idempotency retention.
            let wait = match self.next_lease_deadline() {
                Some(t) => Duration::from_millis(t.saturating_sub(now_ms())),
                None => Duration::from_secs(600),
            }
            .min(Duration::from_secs(600));
            tokio::select! {
                _ = shutdown.changed() => return,
                _ = self.lease_changed.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Channels by descriptor status, for metrics (every status, zeros included, in a fixed order).
    pub fn status_counts(&self) -> Vec<(&'static str, u64)> {
        let inner = self.lock();
        let mut counts: Vec<(&'static str, u64)> =
            ["created", "authenticating", "connected", "offline"].iter().map(|s| (*s, 0)).collect();
        for id in inner.channels.keys() {
            if let Some(d) = self.descriptor_locked(&inner, id) {
                let name = match d.connection.status {
                    ConnStatus::Created => "created",
                    ConnStatus::Authenticating => "authenticating",
                    ConnStatus::Connected => "connected",
                    _ => "offline",
                };
                if let Some(c) = counts.iter_mut().find(|(n, _)| *n == name) {
                    c.1 += 1;
                }
            }
        }
        counts
    }

    /// Every device binding, for the operator's device wall: which channel holds which device, since when, and
    /// whether the channel is connected now.
    pub fn holders(&self) -> Vec<Holder> {
        let held: Vec<Holder> = self
            .lock()
            .channels
            .iter()
            .filter_map(|(id, c)| {
                c.binding.clone().map(|device| Holder {
                    channel_id: id.clone(),
                    connector_id: c.connector_id.clone(),
                    device,
                    open: c.open_on.is_some(),
                    bound_since_ms: None,
                    client: c.client.clone(),
                })
            })
            .collect();
        held.into_iter()
            .map(|mut h| {
                h.bound_since_ms = self.store.bound_since(&h.channel_id).ok().flatten();
                h
            })
            .collect()
    }

    /// Names the holder of `channel` for operators (the wall, `/api/v1/devices`) when it is not xAgent: the MCP
    /// endpoint sets `MCP: <client> <version>`. The caller has made `label` safe to show and bounded.
    pub fn set_channel_client(&self, channel: &str, label: &str) {
        if let Some(c) = self.lock().channels.get_mut(channel) {
            c.client = Some(label.to_owned());
        }
    }

    /// The state store (read by the device wall for the audit log).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Counts for `/health` and operators.
    pub fn stats(&self) -> (usize, usize, usize) {
        let inner = self.lock();
        let open = inner.channels.values().filter(|c| c.open_on.is_some()).count();
        (inner.instances.len(), inner.channels.len(), open)
    }
}

/// One binding as [`Hub::holders`] reports it.
#[derive(Clone, Debug)]
pub struct Holder {
    pub channel_id: String,
    pub connector_id: String,
    pub device: DeviceKey,
    /// Whether the channel is open on a data plane now (an agent that died keeps its device until the lease ends).
    pub open: bool,
    pub bound_since_ms: Option<u64>,
    /// Who holds it when it is not xAgent ([`Hub::set_channel_client`]).
    pub client: Option<String>,
}

/// Display-level hint of a serial (§9: target carries only masked hints): `R58N***7XK`.
pub fn mask_serial(serial: &str) -> String {
    let chars: Vec<char> = serial.chars().collect();
    if chars.len() <= 6 {
        return "***".to_owned();
    }
    let head: String = chars[..4].iter().collect();
    let tail: String = chars[chars.len() - 3..].iter().collect();
    format!("{head}***{tail}")
}

pub fn to_value<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("wire types always serialise")
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
