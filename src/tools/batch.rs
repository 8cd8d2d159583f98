//! `android_batch` (issue 49 item 5): several steps in one call, in order — each a tool of this connector with its
//! arguments —, stopping at the first that fails, with one settle and one `effect` at the end.
//!
//! Nothing of a step is run here: every step goes through the call path's own preparation ([`Steps`], handed down in
//! [`ToolCall::steps`](super::registry::ToolCall) by `server/ws/tool.rs`): the step's tool looked up and its
//! arguments validated, the phone's state checked, the step run under its own deadline and audited as an action of
//! its own. Every step is checked before the first runs: an unknown tool, a nested batch, a tool that waits for a
//! person or a step's invalid arguments refuse the whole batch with nothing sent. Intermediate (and last) steps run
//! with `settle: false`; the batch itself settles once (it is a settling tool: `device.rs` takes the frame before
//! its first step and waits for a still screen after its last), so the `effect` is that of all the steps together.

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::args;
use super::context::{invalid, Ctx};
use super::device::tool;
use super::registry::{Tool, ToolSpec};
use crate::device::adb::AdbBackend;
use crate::protocol::errors::{ErrorCode, ProtoError};

/// The batch's own tool id (a step naming it is refused: no nesting).
pub const ID: &str = "android_batch";
/// Steps of one batch at most.
pub const MAX_STEPS: usize = 10;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct BatchArgs {
    #[schemars(length(min = 1, max = MAX_STEPS))]
    steps: Vec<Step>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Step {
    #[schemars(length(min = 1, max = 256))]
    tool_id: String,
    /// As the tool takes them, without settle
    #[serde(default)]
    arguments: Map<String, Value>,
}

/// Arguments a step may not carry: the batch's own (`settle` is the batch's) and the channel (the batch's).
const NOT_IN_A_STEP: &[&str] = &["settle", "settle_timeout_ms", "effect_tree", "connector_channel_id"];

fn step_error(i: usize, tool_id: &str, e: &ProtoError) -> ProtoError {
    let shown: String = tool_id.chars().take(64).collect();
    let mut out =
        ProtoError::new(e.code, format!("step {i} ({shown}) cannot run: {}; nothing of the batch ran", e.message));
    let mut details = json!({"step": i, "tool_id": shown});
    if let Some(d) = &e.details {
        details["details"] = d.clone();
    }
    out.details = Some(details);
    out
}

/// Checks every step before the first runs.
fn check_all(c: &Ctx, steps: &[Step]) -> Result<(), ProtoError> {
    let Some(runner) = c.call.steps.as_ref() else {
        return Err(ProtoError::new(
            ErrorCode::Internal,
            "android_batch was called without the call path's step runner; nothing ran",
        ));
    };
    for (i, s) in steps.iter().enumerate() {
        let i = i + 1;
        if s.tool_id == ID {
            let e = invalid("a batch cannot contain another android_batch (no nesting)");
            return Err(step_error(i, &s.tool_id, &e));
        }
        if let Some(k) = NOT_IN_A_STEP.iter().find(|k| s.arguments.contains_key(**k)) {
            let e = invalid(format!(
                "argument `{k}` is the batch's own (the batch settles once, after its last step, on its own \
                 channel): leave it out of the step, give it to android_batch"
            ));
            return Err(step_error(i, &s.tool_id, &e));
        }
        runner.check(&s.tool_id, &Value::Object(s.arguments.clone())).map_err(|e| step_error(i, &s.tool_id, &e))?;
    }
    Ok(())
}

pub fn tools(adb: &Arc<AdbBackend>) -> Vec<Arc<dyn Tool>> {
    vec![tool(
        ToolSpec {
            id: ID,
            title: "Run steps in one call",
            description: "Up to 10 tool calls ({tool_id, arguments}) in order, all checked first; stops at the \
                          first failure (`failed`; `steps`: earlier results). One settle and `effect` at the end.",
            input: args::schema::<BatchArgs>(),
            output: json!({"type": "object", "properties": {
                "completed": {"type": "integer"}, "steps": {"type": "array"}, "failed": {"type": "object"}}}),
            side_effect: true,
            settles: true,
            // The steps' own deadlines bound each; this bounds the whole (ten steps of a typical input tool).
            deadline: Duration::from_secs(120),
        },
        adb,
        |c| async move {
            let a: BatchArgs = c.parse()?;
            check_all(&c, &a.steps)?;
            let runner = c.call.steps.clone().expect("checked by check_all");
            let n = a.steps.len();
            let mut done = Vec::with_capacity(n);
            for (i, s) in a.steps.into_iter().enumerate() {
                (c.call.progress)(&format!("step {} of {n}: {}", i + 1, s.tool_id), Some(i as f64 / n as f64));
                match runner.run(&s.tool_id, Value::Object(s.arguments)).await {
                    Ok(result) => done.push(json!({"step": i + 1, "tool_id": s.tool_id, "result": result})),
                    Err(e) => {
                        let failed = json!({"step": i + 1, "tool_id": s.tool_id, "code": e.code.as_str(),
                            "message": e.message, "details": e.details, "not_run": n - i - 1});
                        return Ok(json!({"completed": i, "steps": done, "failed": failed}));
                    }
                }
            }
            Ok(json!({"completed": n, "steps": done}))
        },
    )]
}
