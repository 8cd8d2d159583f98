//! A scripted [`Backend`]: a device list the caller sets and changes, the releases the hub reports recorded, and
//! device changes announced by hand. The hub's unit tests (`channels/tests.rs`) and the dispatch tests
//! (`tests/tool_dispatch.rs`) drive the channel layer with it, so there is one fake and it cannot drift from
//! the trait. It talks to no phone; the real device layer is tested against the simulated phone (`sim/`).

use std::sync::{Arc, Mutex};

use tokio::sync::broadcast;

use super::backend::Backend;
use super::key::{DeviceInfo, DeviceKey, DeviceState};
use crate::protocol::card::{AuthField, AuthFlow};

pub struct FakeBackend {
    /// What `devices()` answers; change it, then [`FakeBackend::announce`] the device.
    pub devices: Mutex<Vec<DeviceInfo>>,
    /// Every `released()` call, in order.
    pub released: Mutex<Vec<DeviceKey>>,
    tx: broadcast::Sender<DeviceKey>,
}

impl FakeBackend {
    /// The adb server every fake device is on.
    pub const SERVER: &'static str = "srv";

    /// Devices with these serials and states (a Google "Pixel" on SDK 34 each).
    pub fn new(serials: &[(&str, DeviceState)]) -> Arc<FakeBackend> {
        Arc::new(FakeBackend {
            devices: Mutex::new(
                serials
                    .iter()
                    .map(|(s, st)| DeviceInfo {
                        key: Self::key(s),
                        state: *st,
                        model: "Pixel".into(),
                        manufacturer: "Google".into(),
                        sdk: Some(34),
                    })
                    .collect(),
            ),
            released: Mutex::new(Vec::new()),
            tx: broadcast::channel(16).0,
        })
    }

    /// The key of the fake device `serial`.
    pub fn key(serial: &str) -> DeviceKey {
        DeviceKey { server: Self::SERVER.into(), serial: serial.to_owned() }
    }

    /// Tells subscribers (the hub) that `serial` changed, as the tracker does.
    pub fn announce(&self, serial: &str) {
        let _ = self.tx.send(Self::key(serial));
    }
}

impl Backend for FakeBackend {
    fn auth_flows(&self) -> Vec<AuthFlow> {
        vec![AuthFlow {
            id: "adb_device",
            target_type: "device",
            kind: "form",
            title: "Bind an Android device",
            description: None,
            fields: vec![AuthField {
                name: "serial",
                label: "Serial",
                input_type: "text",
                required: false,
                placeholder: None,
                help_text: None,
            }],
        }]
    }
    fn devices(&self) -> Vec<DeviceInfo> {
        self.devices.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
    fn subscribe(&self) -> broadcast::Receiver<DeviceKey> {
        self.tx.subscribe()
    }
    fn released(&self, key: &DeviceKey) {
        self.released.lock().unwrap_or_else(|e| e.into_inner()).push(key.clone());
    }
}
