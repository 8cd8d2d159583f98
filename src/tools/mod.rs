//! The tools room: every agent-facing tool, one family per file, and the list of those a connector serves.
//!
//! Inside, one way: a tool file (one that declares a `ToolSpec`) holds its tools and nothing another tool needs;
//! what several share sits in tool-free files below them (`acted`, `gate`, `keyboard`, `target`, `delta`, `web`,
//! `dump`, `observations`, `tree`, `element`, `picture`, `settle`, `permits`), and at the bottom the tool context
//! (`context`: `Ctx`, the checks every tool applies) and the registry (`registry`: `Tool`, `ToolSpec`, `ToolCall`,
//! `Registry`). Nothing imports this file: it only declares the modules, lists the default tools and re-exports
//! what the rest of the crate names as `crate::tools::X`.

pub mod acted;
pub mod apps;
pub mod args;
pub mod batch;
pub mod clipboard;
pub mod context;
pub mod delta;
pub mod device;
pub mod dump;
pub mod element;
pub mod files;
pub mod gate;
pub mod gesture;
pub mod human;
pub mod input;
pub mod keyboard;
pub mod logcat;
pub mod notifications;
pub mod observations;
pub mod observe;
pub mod permissions;
pub mod permits;
pub mod picture;
pub mod power;
pub mod record;
pub mod registry;
pub mod requests;
pub mod rotate;
pub mod schema;
pub mod screen;
pub mod settle;
pub mod shell;
pub mod status;
pub mod suggest;
pub mod target;
pub mod tree;
pub mod ui;
pub mod web;

use std::sync::Arc;

pub use registry::{BoxFuture, ProgressFn, Registry, Steps, Tool, ToolCall, ToolSpec};

impl Registry {
    /// The production registry: every device tool, one family per file.
    pub fn device_tools(adb: &Arc<crate::device::adb::AdbBackend>) -> Registry {
        Self::device_tools_with(adb, &Arc::new(crate::policy::Policy::default()))
    }

    /// The registry under an operator policy: risky tools only when enabled, disabled tools left out (the card
    /// must not declare a tool that would fail).
    pub fn device_tools_with(
        adb: &Arc<crate::device::adb::AdbBackend>,
        policy: &Arc<crate::policy::Policy>,
    ) -> Registry {
        let mut tools = status::tools(adb);
        tools.extend(input::tools(adb, gate::InputGate::of(policy)));
        tools.extend(gesture::tools(adb, gate::InputGate::of(policy)));
        tools.extend(power::tools(adb));
        tools.extend(rotate::tools(adb));
        tools.extend(ui::tools(adb, policy.web_content()));
        tools.extend(apps::tools(adb));
        tools.extend(logcat::tools(adb));
        tools.extend(notifications::tools(adb, policy));
        tools.extend(clipboard::tools(adb));
        tools.extend(permissions::tools(adb, policy));
        tools.extend(screen::tools(adb));
        tools.extend(record::tools(adb));
        tools.extend(observe::tools(adb, policy.web_content()));
        tools.extend(files::tools(adb));
        tools.extend(batch::tools(adb));
        let human = Arc::new(requests::Requests::default());
        tools.extend(human::tools(&human));
        tools.extend(apps::risky_tools(adb, policy));
        tools.extend(shell::tools(adb, policy));
        tools.retain(|t| policy.tool_enabled(t.spec().id));
        let mut reg = Registry::new(tools).expect("the built-in tool registry is valid (checked by tests)");
        reg.deadline_max = policy.tool_deadline_max;
        reg.human = human;
        reg
    }
}
