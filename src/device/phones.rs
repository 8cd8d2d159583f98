//! The ADB backend as the channel layer sees it ([`Backend`]): where the backend core (`adb.rs`: devices, paths,
//! operations) meets what runs around it — the lease conditions a bind sets and a release undoes
//! (`conditions.rs`), the recovery ladder (`recovery.rs`), the phones' helpers (`helper.rs`) and health
//! (`health.rs`). It is the top of `device/`: the features it starts import the core, and the core imports none
//! of them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{broadcast, watch};

use super::adb::AdbBackend;
use super::backend::Backend;
use super::key::{DeviceInfo, DeviceKey};
use super::{conditions, health, helper, recovery};
use crate::protocol::card::{AuthField, AuthFlow};
use crate::protocol::errors::ProtoError;

impl Backend for AdbBackend {
    fn phone_helper(&self, key: &DeviceKey) -> Option<String> {
        Some(helper::summary(&self.helpers().report(key)))
    }

    fn phone_helper_attention(&self, key: &DeviceKey) -> Vec<serde_json::Value> {
        self.helpers().report(key)["attention"].as_array().cloned().unwrap_or_default()
    }

    fn side_effects_started(&self, key: &DeviceKey) -> Option<u64> {
        Some(self.side_effects_of(key))
    }

    fn adb_servers(&self) -> Vec<(String, Option<Duration>)> {
        self.outages().into_iter().map(|(s, d)| (s.to_string(), d)).collect()
    }

    fn health_of(&self, key: &DeviceKey) -> Option<(health::Snapshot, Vec<health::Warning>)> {
        let s = self.health_book().snapshot(key, Instant::now());
        let w = s.warnings(&self.health_book().thresholds());
        Some((s, w))
    }

    fn command_timed_out(&self, key: &DeviceKey) {
        self.health_book().command_ended(key, true);
    }

    fn health(&self) -> Vec<(DeviceKey, health::Snapshot, Vec<health::Warning>)> {
        let t = self.health_book().thresholds();
        self.health_book()
            .all(Instant::now())
            .into_iter()
            .map(|(k, s)| {
                let w = s.warnings(&t);
                (k, s, w)
            })
            .collect()
    }

    fn auth_flows(&self) -> Vec<AuthFlow> {
        vec![AuthFlow {
            id: "adb_device",
            target_type: "device",
            kind: "form",
            title: "Bind an Android device",
            description: Some(
                "Bind one Android phone attached to this connector's adb server(s). Leave the serial empty to take \
                 any free online phone, optionally one matching every given constraint (model, manufacturer, SDK \
                 range, operator labels).",
            ),
            fields: vec![
                AuthField {
                    name: "serial",
                    label: "Serial (optional)",
                    input_type: "text",
                    required: false,
                    placeholder: Some("as printed by `adb devices`, e.g. R58N123ABC"),
                    help_text: Some("Empty: bind any free, online, authorised device (matching the fields below)."),
                },
                AuthField {
                    name: "model",
                    label: "Model (optional)",
                    input_type: "text",
                    required: false,
                    placeholder: Some("e.g. Pixel 7"),
                    help_text: Some("ro.product.model, case-insensitive; without a serial only."),
                },
                AuthField {
                    name: "manufacturer",
                    label: "Manufacturer (optional)",
                    input_type: "text",
                    required: false,
                    placeholder: Some("e.g. samsung"),
                    help_text: Some("ro.product.manufacturer, case-insensitive."),
                },
                AuthField {
                    name: "min_sdk",
                    label: "Minimum SDK (optional)",
                    input_type: "text",
                    required: false,
                    placeholder: Some("e.g. 30"),
                    help_text: Some("Lowest Android API level accepted."),
                },
                AuthField {
                    name: "max_sdk",
                    label: "Maximum SDK (optional)",
                    input_type: "text",
                    required: false,
                    placeholder: Some("e.g. 34"),
                    help_text: Some("Highest Android API level accepted."),
                },
                AuthField {
                    name: "labels",
                    label: "Labels (optional)",
                    input_type: "text",
                    required: false,
                    placeholder: Some("e.g. pool:checkout, sim:carrier-x"),
                    help_text: Some("Comma-separated operator labels (policy file); the device must have all."),
                },
            ]
            .into_iter()
            // Offered only where the policy lets an agent choose something (`device::conditions`).
            .chain(self.conditions().agents_may_choose().then_some(AuthField {
                name: "conditions",
                label: "Lease conditions (optional)",
                input_type: "text",
                required: false,
                placeholder: Some("e.g. {\"dark_mode\": true, \"font_scale\": 1.3}"),
                help_text: Some(
                    "Lease conditions for this bind, a JSON object: only those the operator's policy lets agents \
                     choose (lease_conditions.agent_may_set); any other is refused. Undone at release.",
                ),
            }))
            .collect(),
        }]
    }

    fn devices(&self) -> Vec<DeviceInfo> {
        let mut v = self.view();
        v.sort_by(|a, b| a.key.cmp(&b.key));
        v
    }

    fn info(&self, key: &DeviceKey) -> Option<DeviceInfo> {
        self.view().into_iter().find(|d| &d.key == key)
    }

    fn resolve_serial(&self, serial: &str) -> Option<DeviceKey> {
        self.ids().resolve_serial(serial)
    }

    fn aliases(&self, key: &DeviceKey) -> Vec<String> {
        self.ids().names_of(key)
    }

    fn keep_key(&self, key: &DeviceKey) {
        self.ids().prefer(key);
    }

    fn subscribe(&self) -> broadcast::Receiver<DeviceKey> {
        self.changes()
    }

    fn start(self: Arc<Self>, shutdown: watch::Receiver<bool>) {
        let mut stop = shutdown.clone();
        let me = Arc::downgrade(&self);
        self.spawn_trackers(shutdown.clone());
        tokio::spawn(recovery::run(self.clone(), shutdown.clone()));
        // Shutting down ends every phone helper (each stream closed: the helper exits at the end of its input).
        tokio::spawn(async move {
            while !*stop.borrow_and_update() {
                if stop.changed().await.is_err() {
                    break;
                }
            }
            if let Some(me) = me.upgrade() {
                me.helpers().shutdown();
            }
        });
        tokio::spawn(conditions::sweep(self, shutdown));
    }

    fn released(&self, key: &DeviceKey) {
        if self.conditions().released(key) {
            // The release job needs the backend itself: it is reached through the tracker's Arc.
            if let Some(me) = self.me() {
                tokio::spawn(conditions::release(me, key.clone()));
            }
        }
    }

    fn cut(self: Arc<Self>, key: DeviceKey) -> futures_util::future::BoxFuture<'static, ()> {
        self.cut_if(key, Box::new(|| true))
    }

    fn cut_if(
        self: Arc<Self>,
        key: DeviceKey,
        sent: Box<dyn Fn() -> bool + Send + Sync>,
    ) -> futures_util::future::BoxFuture<'static, ()> {
        Box::pin(async move {
            // In the phone's order: after whatever the cut calls left holding its slot, before the next lease's
            // first input. Killing the helper stops a gesture it still plays; the round trip itself is the fence
            // (a command of the cut calls the adb server was still forwarding has reached the phone by its end).
            // Whether any input went out is asked only now that the slot is ours: the stopped calls are gone.
            let (me, k) = (self.clone(), key.clone());
            let r = self
                .op(&key, true, Duration::from_secs(20), |d| async move {
                    if !sent() {
                        return Ok(());
                    }
                    me.helpers().kill_for_cut(&k, &d).await;
                    d.shell("true").await.map(|_| ())
                })
                .await;
            if let Err(e) = r {
                tracing::warn!(error = %e.message, "stopping the phone's in-flight input failed");
            }
        })
    }

    fn prepare(self: Arc<Self>, key: DeviceKey) -> futures_util::future::BoxFuture<'static, Result<(), ProtoError>> {
        if conditions::idle(&self, &key) {
            self.conditions().lease_continues(&key);
            return Box::pin(async { Ok(()) });
        }
        Box::pin(conditions::prepare(self, key))
    }

    fn lease_report(&self, key: &DeviceKey) -> Option<(Vec<String>, Vec<String>)> {
        Some(conditions::report(self, key))
    }

    fn not_restored(&self, key: &DeviceKey) -> Option<String> {
        self.conditions().not_restored(key)
    }

    fn ask_conditions(&self, key: Option<&DeviceKey>, asked: Option<&serde_json::Value>) -> Result<(), String> {
        self.conditions().ask(key, asked)
    }

    fn lease_continues(&self, key: &DeviceKey) {
        self.conditions().lease_continues(key);
    }

    fn settling(&self) -> bool {
        self.lists_pending()
    }
}
