//! The tool registry: the single source of the card's `tools`, the descriptor's tool list, argument validation and
//! dispatch, and what a tool is (`Tool`, `ToolSpec`, `ToolCall`). At the bottom of `tools/`: every tool file names
//! it, it names no tool file (which tools a connector serves is `tools/mod.rs`'s list).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use super::requests::Requests;
use super::{schema, settle, suggest};
use crate::protocol::card::{self, ToolDecl};
use crate::protocol::errors::{ErrorCode, ProtoError};
use crate::protocol::{DEVICE_PROFILE, SKILL_NAME};

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Static description of one tool. `input` is written without `connector_channel_id`; the registry injects it
/// through the one protocol helper.
#[derive(Clone, Debug)]
pub struct ToolSpec {
    pub id: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub input: Value,
    pub output: Value,
    /// Changes device state (needs per-device ordering and a repeated-call rule).
    pub side_effect: bool,
    /// An input tool that settles (`tools::settle`): the registry adds `settle`/`settle_timeout_ms` to its input
    /// and `effect` to its output, and hands the parsed value to the call as [`ToolCall::settle`].
    pub settles: bool,
    /// Default deadline of one call.
    pub deadline: Duration,
}

/// Progress events for long tools (§8.20); delivery is best effort, the ack is what counts.
pub type ProgressFn = Arc<dyn Fn(&str, Option<f64>) + Send + Sync>;

/// Everything a tool call gets. The device comes from the channel's binding, never from the arguments.
pub struct ToolCall {
    pub channel_id: String,
    pub binding: Option<crate::device::DeviceKey>,
    /// Validated arguments, `connector_channel_id` removed (tools must not consume it, §8.18).
    pub args: Map<String, Value>,
    pub tool_call_id: Option<String>,
    pub progress: ProgressFn,
    /// `settle`/`settle_timeout_ms` of a settling tool (removed from `args`); `None` for the others.
    pub settle: Option<settle::SettleArgs>,
    /// The deadline this call runs under (the tool's, capped by `--tool-deadline-max`): a tool that waits on
    /// purpose (`android_request_human`) ends its wait before it, with its own answer.
    pub deadline: Duration,
    /// How `android_batch` runs its steps: the call path's own preparation of a step (`server/ws/tool.rs`), handed
    /// down by it; `None` for every other call and for a step (no nesting).
    pub steps: Option<Arc<dyn Steps>>,
}

/// The call path's way of running one step of a batch (issue 49): the step's tool looked up, its arguments
/// validated against its served schema, the phone's state and the operator's hold checked, the step run under its
/// own deadline with `settle: false`, and audited as an action of its own — the same path a `tool.invoke` takes,
/// never a shortcut. The batch's own cancellation (deadline, cut, takeover, cancel) drops the step running and the
/// rest never start.
pub trait Steps: Send + Sync {
    /// Looks the step's tool up and validates its arguments; nothing runs. `Err`: why the step cannot run.
    fn check(&self, tool_id: &str, arguments: &Value) -> Result<(), ProtoError>;
    /// Runs the step (checked again: the screen and the phone may have changed since).
    fn run(&self, tool_id: &str, arguments: Value) -> BoxFuture<Result<Value, ProtoError>>;
}

pub trait Tool: Send + Sync + 'static {
    fn spec(&self) -> &ToolSpec;
    fn call(&self, call: ToolCall) -> BoxFuture<Result<Value, ProtoError>>;
    /// Hands the tool the transfer plane's cache when the server starts; tools that produce or consume files keep
    /// it, others ignore it.
    fn attach_files(&self, _files: &Arc<crate::files::FileCache>) {}
    /// A call that waits for a person (`android_request_human`): an operator's takeover of the phone is what it
    /// waits for, so the takeover does not stop it (`server/ws/tool.rs`), and it is audited as a record of its own
    /// whatever its outcome (it sends the phone nothing, yet asking a person is an action).
    fn waits_for_operator(&self) -> bool {
        false
    }
}

/// A looked-up tool, its validated arguments (`connector_channel_id`, `settle` and `settle_timeout_ms` removed) and,
/// for a settling tool, the parsed settle arguments.
pub type Prepared = (Arc<dyn Tool>, Map<String, Value>, Option<settle::SettleArgs>);

pub struct Registry {
    tools: Vec<(ToolSpec, Value, Arc<dyn Tool>)>,
    by_id: HashMap<&'static str, usize>,
    /// The operator's cap on tool deadlines (`--tool-deadline-max`), if any.
    pub(super) deadline_max: Option<std::time::Duration>,
    /// The open requests for a person (`android_request_human`): the wall shows them, a return answers them.
    pub(super) human: Arc<Requests>,
}

impl Registry {
    /// Builds the registry and enforces the tool rules of §4.1/§10 once, at start-up: valid unique ids, an object
    /// schema the argument validator fully understands.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Result<Registry, String> {
        let mut reg =
            Registry { tools: Vec::new(), by_id: HashMap::new(), deadline_max: None, human: Default::default() };
        for tool in tools {
            let mut spec = tool.spec().clone();
            if !card::is_valid_tool_id(spec.id) {
                return Err(format!("tool id {:?} must match ^[A-Za-z0-9_.-]{{1,256}}$", spec.id));
            }
            if reg.by_id.contains_key(spec.id) {
                return Err(format!("tool id {} is registered twice", spec.id));
            }
            let input = if spec.settles { with_settle(&mut spec)? } else { spec.input.clone() };
            let input = card::with_connector_channel_id(input);
            schema::check_supported(&input, spec.id)?;
            reg.by_id.insert(spec.id, reg.tools.len());
            reg.tools.push((spec, input, tool));
        }
        Ok(reg)
    }

    /// The open requests for a person (see [`Requests`]).
    pub fn human(&self) -> &Arc<Requests> {
        &self.human
    }

    /// The deadline a call of `spec` runs under: its own, capped by the operator's `--tool-deadline-max`.
    pub fn deadline(&self, spec: &ToolSpec) -> std::time::Duration {
        self.deadline_max.map_or(spec.deadline, |m| spec.deadline.min(m))
    }

    /// The deadline of one call: a settling call gets its settle timeout (and the frames around it) on top of the
    /// tool's own, so that waiting for the screen never eats the time the input itself may take. The operator's cap
    /// still caps the whole.
    pub fn call_deadline(&self, spec: &ToolSpec, settle: Option<settle::SettleArgs>) -> std::time::Duration {
        let own = match settle {
            Some(s) if s.settle => spec.deadline + s.timeout + settle::EXTRA_DEADLINE,
            _ => spec.deadline,
        };
        self.deadline_max.map_or(own, |m| own.min(m))
    }

    /// Gives every tool the file cache (see [`Tool::attach_files`]); `run::start` calls it once.
    pub fn attach_files(&self, files: &Arc<crate::files::FileCache>) {
        for (_, _, tool) in &self.tools {
            tool.attach_files(files);
        }
    }

    pub fn empty() -> Registry {
        Registry { tools: Vec::new(), by_id: HashMap::new(), deadline_max: None, human: Default::default() }
    }

    pub fn ids(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.tools.iter().map(|(s, _, _)| s.id)
    }

    pub fn spec(&self, id: &str) -> Option<&ToolSpec> {
        self.by_id.get(id).map(|&i| &self.tools[i].0)
    }

    /// The card's `tools`: every tool under our one profile, pointing at our main skill.
    pub fn declarations(&self) -> Vec<ToolDecl> {
        self.tools
            .iter()
            .map(|(spec, input, _)| ToolDecl {
                tool_id: spec.id.to_owned(),
                profile: DEVICE_PROFILE,
                title: spec.title.to_owned(),
                description: spec.description.to_owned(),
                related_skill_ids: vec![SKILL_NAME],
                input_schema: input.clone(),
                output_schema: spec.output.clone(),
            })
            .collect()
    }

    /// Looks a tool up and validates `arguments` against its served input schema.
    pub fn prepare(&self, tool_id: &str, arguments: &Value) -> Result<Prepared, ProtoError> {
        let &i = self.by_id.get(tool_id).ok_or_else(|| {
            // The id is the client's: bounded in the answer, and compared only in its bounded form.
            let shown: String = tool_id.chars().take(64).collect();
            if crate::policy::RISKY_TOOLS.contains(&tool_id) {
                // Not a typo: a tool this connector has and its operator did not enable. "Did you mean" would send
                // the agent to an unrelated tool.
                return ProtoError::new(
                    ErrorCode::ToolNotFound,
                    format!(
                        "tool `{shown}` is opt-in and this connector's operator has not enabled it \
                         (policy `enabled_risky_tools`); it is not in the card. Ask a person if you need it"
                    ),
                );
            }
            let hint = suggest::did_you_mean(&shown, self.ids());
            ProtoError::new(ErrorCode::ToolNotFound, format!("tool `{shown}` is not in this connector's card; {hint}"))
        })?;
        let (_, input, tool) = &self.tools[i];
        // Lenient where unambiguous ("540" for an integer, "back" for BACK), then the served schema's check.
        let mut arguments = arguments.clone();
        schema::coerce(input, &mut arguments);
        schema::validate(input, &arguments, "").map_err(|m| ProtoError::new(ErrorCode::InvalidArguments, m))?;
        let mut args = arguments.as_object().cloned().unwrap_or_default();
        args.remove("connector_channel_id");
        let settle = tool.spec().settles.then(|| settle::take(&mut args));
        Ok((tool.clone(), args, settle))
    }
}

/// Adds the settle input properties to a settling tool's input schema and `effect` to its output schema (both
/// defined once, in `tools::settle`); returns the input schema.
fn with_settle(spec: &mut ToolSpec) -> Result<Value, String> {
    let mut input = spec.input.clone();
    let props = input.get_mut("properties").and_then(Value::as_object_mut);
    let props = props.ok_or_else(|| format!("tool {}: a settling tool's input needs `properties`", spec.id))?;
    for (name, schema) in settle::input_properties() {
        if props.insert(name.to_owned(), schema).is_some() {
            return Err(format!("tool {}: `{name}` is the registry's to add", spec.id));
        }
    }
    let out = spec.output.get_mut("properties").and_then(Value::as_object_mut);
    let out = out.ok_or_else(|| format!("tool {}: a settling tool's output needs `properties`", spec.id))?;
    out.insert("effect".to_owned(), settle::effect_schema(spec.id));
    Ok(input)
}
