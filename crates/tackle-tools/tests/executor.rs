//! The executor pipeline end to end with a set of test tools.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tackle_protocol::{AgentEvent, ErrorCategory, ToolAnnotations, ToolError, ToolInput, ToolUse};
use tackle_tools::{
    ApprovalMode, ApprovalPolicy, ApprovalQueue, Approver, AutoApprove, CallOptions, DenyAll, EventSink,
    ExecLimits, HookAction, HookPolicy, HookRule, Offloaded, OutputOffloader, ToolContext, ToolExecutor,
    ToolFailure, ToolOutput, ToolRegistry, TypedTool, typed,
};

/// Arguments of echo.
#[derive(Deserialize, JsonSchema)]
struct EchoArgs {
    /// Text to return.
    text: String,
    /// Times to repeat it.
    #[serde(default)]
    times: Option<u32>,
}

struct Echo;

#[async_trait]
impl TypedTool for Echo {
    type Args = EchoArgs;
    fn name(&self) -> &str {
        "echo"
    }
    fn description(&self) -> String {
        "Echo text.".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations::read_only()
    }
    async fn run(&self, args: EchoArgs, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        Ok(ToolOutput::text(args.text.repeat(args.times.unwrap_or(1) as usize)))
    }
}

/// No arguments.
#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

struct Slow {
    cancelled: Arc<Mutex<bool>>,
}

#[async_trait]
impl TypedTool for Slow {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "slow"
    }
    fn description(&self) -> String {
        "Never finishes on its own.".into()
    }
    async fn run(&self, _: NoArgs, ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        ctx.cancel.cancelled().await;
        *self.cancelled.lock().unwrap() = true;
        Err(ToolFailure::internal("cancelled"))
    }
}

struct Panics;

#[async_trait]
impl TypedTool for Panics {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "panics"
    }
    fn description(&self) -> String {
        "Crashes.".into()
    }
    async fn run(&self, _: NoArgs, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        panic!("index out of bounds: the len is 0 but the index is 3")
    }
}

struct Missing;

#[async_trait]
impl TypedTool for Missing {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "missing"
    }
    fn description(&self) -> String {
        "Fails with an io error.".into()
    }
    async fn run(&self, _: NoArgs, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        Err(std::fs::read("/definitely/not/here").unwrap_err().into())
    }
}

struct Destroy;

#[async_trait]
impl TypedTool for Destroy {
    type Args = NoArgs;
    fn name(&self) -> &str {
        "destroy"
    }
    fn description(&self) -> String {
        "Deletes things.".into()
    }
    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations { destructive: true, ..ToolAnnotations::default() }
    }
    async fn run(&self, _: NoArgs, _ctx: ToolContext) -> Result<ToolOutput, ToolFailure> {
        Ok("destroyed".into())
    }
}

fn registry(cancelled: Arc<Mutex<bool>>) -> Arc<ToolRegistry> {
    let mut r = ToolRegistry::new();
    r.register(typed(Echo)).unwrap();
    r.register(typed(Slow { cancelled })).unwrap();
    r.register(typed(Panics)).unwrap();
    r.register(typed(Missing)).unwrap();
    r.register(typed(Destroy)).unwrap();
    Arc::new(r)
}

/// Only `slow` has a short timeout: a panicking tool may take longer than 200 ms to unwind on a
/// busy machine (the backtrace is symbolized under `RUST_BACKTRACE=1`), and must still be
/// reported as the crash it is.
fn executor(approver: Arc<dyn Approver>, rules: Vec<HookRule>) -> ToolExecutor {
    executor_timing_out_slow_after(approver, rules, Duration::from_millis(200))
}

fn executor_timing_out_slow_after(
    approver: Arc<dyn Approver>,
    rules: Vec<HookRule>,
    slow_timeout: Duration,
) -> ToolExecutor {
    let limits = ExecLimits {
        timeout: Duration::from_secs(60),
        per_tool_timeout: [("slow".to_owned(), slow_timeout)].into(),
        max_output_bytes: 200,
        max_output_lines: 10,
        ..ExecLimits::default()
    };
    ToolExecutor::new(
        registry(Arc::default()),
        HookPolicy::new(rules, ApprovalMode::Server).unwrap(),
        approver,
        limits,
    )
}

fn call(name: &str, args: Value) -> ToolUse {
    ToolUse { id: format!("call_{name}").into(), name: name.into(), input: args.into() }
}

fn ctx() -> ToolContext {
    ToolContext::new("s1", "c1", std::env::temp_dir())
}

fn envelope(report: &tackle_tools::CallReport) -> &ToolError {
    report.outcome.as_ref().expect_err("expected a failure")
}

#[tokio::test]
async fn a_successful_call_reports_what_the_model_sees() {
    let ex = executor(Arc::new(AutoApprove), vec![]);
    let r = ex.execute(&call("echo", json!({"text": "hi"})), ctx(), &CallOptions::default()).await;
    assert_eq!(r.result.content, "hi");
    assert!(!r.result.is_error && !r.truncated);
    assert_eq!((r.bytes, r.lines), (2, 1));
}

#[tokio::test]
async fn envelopes_for_every_failure_kind() {
    let ex = executor(Arc::new(AutoApprove), vec![HookRule::tools("destroy", HookAction::Deny)]);
    let cases = vec![
        call("ecoh", json!({"text": "x"})),
        call("echo", json!({"text": 3})),
        ToolUse { id: "c".into(), name: "echo".into(), input: ToolInput::parse("{\"text\": ") },
        call("missing", json!({})),
        call("panics", json!({})),
        call("slow", json!({})),
        call("destroy", json!({})),
    ];
    let mut envelopes = Vec::new();
    for c in &cases {
        let r = ex.execute(c, ctx(), &CallOptions::default()).await;
        assert!(r.result.is_error, "{}", c.name);
        let parsed: ToolError = serde_json::from_str(&r.result.content).unwrap();
        assert_eq!(&parsed, envelope(&r), "the model sees exactly the envelope");
        envelopes.push(parsed);
    }
    let categories: Vec<ErrorCategory> = envelopes.iter().map(|e| e.category).collect();
    assert_eq!(
        categories,
        [
            ErrorCategory::UnknownTool,
            ErrorCategory::InvalidArgs,
            ErrorCategory::InvalidArgs,
            ErrorCategory::NotFound,
            ErrorCategory::Internal,
            ErrorCategory::Timeout,
            ErrorCategory::Denied
        ]
    );
    insta::assert_json_snapshot!(envelopes);
}

#[tokio::test]
async fn the_executor_survives_a_panicking_tool() {
    let ex = executor(Arc::new(AutoApprove), vec![]);
    ex.execute(&call("panics", json!({})), ctx(), &CallOptions::default()).await;
    let r = ex.execute(&call("echo", json!({"text": "still here"})), ctx(), &CallOptions::default()).await;
    assert_eq!(r.result.content, "still here");
}

#[tokio::test]
async fn a_timeout_cancels_the_call() {
    let cancelled = Arc::new(Mutex::new(false));
    let mut reg = ToolRegistry::new();
    reg.register(typed(Slow { cancelled: cancelled.clone() })).unwrap();
    let limits = ExecLimits { timeout: Duration::from_millis(50), ..ExecLimits::default() };
    let ex = ToolExecutor::new(
        Arc::new(reg),
        HookPolicy::defaults(ApprovalMode::Headless),
        Arc::new(AutoApprove),
        limits,
    );
    let context = ctx();
    let r = ex.execute(&call("slow", json!({})), context.clone(), &CallOptions::default()).await;
    assert_eq!(envelope(&r).category, ErrorCategory::Timeout);
    assert!(envelope(&r).retryable);
    assert!(context.cancel.is_cancelled(), "the call's token was cancelled");
    assert!(*cancelled.lock().unwrap(), "the tool saw the cancellation");
}

#[tokio::test]
async fn turn_cancellation_interrupts() {
    // The timeout is far away, so only the cancellation can end the call.
    let ex = executor_timing_out_slow_after(Arc::new(AutoApprove), vec![], Duration::from_secs(60));
    let context = ctx();
    let token = context.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(10)).await;
        token.cancel();
    });
    let report = ex.execute(&call("slow", json!({})), context, &CallOptions::default()).await;
    assert_eq!(envelope(&report).category, ErrorCategory::Interrupted);
}

#[tokio::test]
async fn large_outputs_keep_head_and_tail() {
    let ex = executor(Arc::new(AutoApprove), vec![]);
    let r = ex
        .execute(&call("echo", json!({"text": "0123456789\n", "times": 100})), ctx(), &CallOptions::default())
        .await;
    assert!(r.truncated);
    assert_eq!((r.bytes, r.lines), (1100, 100));
    let text = &r.result.content;
    assert!(text.starts_with("0123456789\n") && text.ends_with("0123456789\n"), "{text}");
    assert!(text.contains("bytes cut, in lines 6-96; output was 1100 bytes, 100 lines ...]\n"), "{text}");
    assert!(text.len() <= 200 && text.lines().count() <= 10, "{text}");
}

#[tokio::test]
async fn inactive_tools_are_refused_naming_the_active_ones() {
    let ex = executor(Arc::new(AutoApprove), vec![]);
    let allowed = vec!["echo".to_string()];
    let r = ex.execute(&call("destroy", json!({})), ctx(), &CallOptions { allowed: Some(&allowed) }).await;
    let e = envelope(&r);
    assert_eq!(e.category, ErrorCategory::InactiveTool);
    assert_eq!(e.hint.as_deref(), Some("tools available now: echo"));
}

fn collecting_ctx() -> (ToolContext, Arc<Mutex<Vec<AgentEvent>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut c = ctx();
    let keep = seen.clone();
    c.events = EventSink::new(move |e| keep.lock().unwrap().push(e));
    (c, seen)
}

#[tokio::test]
async fn destructive_tools_wait_for_approval() {
    let queue = ApprovalQueue::default();
    let ex = Arc::new(executor(Arc::new(queue.clone()), vec![]));
    let (context, events) = collecting_ctx();
    let task = tokio::spawn({
        let ex = ex.clone();
        async move { ex.execute(&call("destroy", json!({})), context, &CallOptions::default()).await }
    });
    while queue.pending(Some("s1")).is_empty() {
        tokio::task::yield_now().await;
    }
    let pending = queue.pending(None);
    assert_eq!(pending[0].tool, "destroy");
    queue.resolve(&pending[0].id, true, None).unwrap();
    let r = task.await.unwrap();
    assert_eq!(r.result.content, "destroyed");
    let names: Vec<&str> = events.lock().unwrap().iter().map(|e| e.name()).collect();
    assert_eq!(names, ["approval_requested", "approval_resolved"]);
}

/// The turn's approval policy decides before the approver is asked: `deny` and `auto` never
/// wait, `wait` waits at most its timeout, and nothing is left pending.
#[tokio::test]
async fn the_turns_approval_policy_bounds_the_wait() {
    let queue = ApprovalQueue::default();
    let ex = executor(Arc::new(queue.clone()), vec![]);
    let destroy = call("destroy", json!({}));

    let (context, events) = collecting_ctx();
    context.turn.insert(ApprovalPolicy::Deny);
    let r = ex.execute(&destroy, context, &CallOptions::default()).await;
    let e = envelope(&r);
    assert_eq!(e.category, ErrorCategory::Denied);
    assert!(e.message.contains("nobody can give it here (approval policy `deny`)"), "{}", e.message);
    assert!(events.lock().unwrap().is_empty(), "nothing asked, nothing pending");

    let (context, _) = collecting_ctx();
    context.turn.insert(ApprovalPolicy::Auto);
    let r = ex.execute(&destroy, context, &CallOptions::default()).await;
    assert_eq!(r.result.content, "destroyed");

    let (context, events) = collecting_ctx();
    context.turn.insert(ApprovalPolicy::Wait(Duration::from_millis(300)));
    let started = std::time::Instant::now();
    let r = ex.execute(&destroy, context, &CallOptions::default()).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    let e = envelope(&r);
    assert_eq!(e.category, ErrorCategory::Denied);
    assert!(e.message.contains("nobody gave it within 300ms"), "{}", e.message);
    assert!(queue.pending(None).is_empty(), "the timed-out approval is withdrawn");
    let names: Vec<&str> = events.lock().unwrap().iter().map(|e| e.name()).collect();
    assert_eq!(names, ["approval_requested", "approval_resolved"]);

    // Decided in time, `wait` runs the call.
    let (context, _) = collecting_ctx();
    context.turn.insert(ApprovalPolicy::Wait(Duration::from_secs(60)));
    let ex = Arc::new(ex);
    let task = tokio::spawn({
        let ex = ex.clone();
        async move { ex.execute(&call("destroy", json!({})), context, &CallOptions::default()).await }
    });
    while queue.pending(Some("s1")).is_empty() {
        tokio::task::yield_now().await;
    }
    queue.resolve(&queue.pending(None)[0].id, true, None).unwrap();
    assert_eq!(task.await.unwrap().result.content, "destroyed");
}

/// Decides after a person's thinking time.
struct SlowPerson(Duration);

#[async_trait]
impl Approver for SlowPerson {
    async fn decide(&self, _request: tackle_tools::ApprovalRequest) -> tackle_tools::ApprovalDecision {
        tokio::time::sleep(self.0).await;
        tackle_tools::ApprovalDecision::approve()
    }
}

/// A call's time is the tool's, not the time a person took to approve it: the wait is reported
/// apart.
#[tokio::test(start_paused = true)]
async fn a_calls_time_excludes_the_wait_for_approval() {
    let ex = executor(Arc::new(SlowPerson(Duration::from_secs(30))), vec![]);
    let r = ex.execute(&call("destroy", json!({})), ctx(), &CallOptions::default()).await;
    assert_eq!(r.result.content, "destroyed");
    assert_eq!(r.approval_wait, Duration::from_secs(30));
    assert!(r.duration < Duration::from_secs(1), "{:?}", r.duration);
}

#[tokio::test]
async fn a_denial_is_an_envelope_with_the_reason() {
    let ex = executor(Arc::new(DenyAll::new("re-run with --yes to allow it")), vec![]);
    let r = ex.execute(&call("destroy", json!({})), ctx(), &CallOptions::default()).await;
    let e = envelope(&r);
    assert_eq!(e.category, ErrorCategory::Denied);
    assert!(e.message.contains("re-run with --yes"), "{}", e.message);
}

#[tokio::test]
async fn silent_and_log_rules_run_without_approval() {
    let ex = executor(Arc::new(DenyAll::new("no")), vec![HookRule::tools("dest*", HookAction::Silent)]);
    let r = ex.execute(&call("destroy", json!({})), ctx(), &CallOptions::default()).await;
    assert_eq!(r.result.content, "destroyed");
}

struct Offload;

#[async_trait]
impl OutputOffloader for Offload {
    fn threshold_bytes(&self, _tool: &str) -> Option<usize> {
        Some(100)
    }
    async fn offload(&self, _ctx: &ToolContext, tool: &str, output: &str) -> Result<Offloaded, ToolFailure> {
        Ok(Offloaded {
            reference: format!("{tool}: {} bytes stored\nlocator: out_1", output.len()),
            locator: "out_1".into(),
        })
    }
}

#[tokio::test]
async fn offloading_replaces_large_outputs_with_a_reference() {
    let ex = executor(Arc::new(AutoApprove), vec![]).with_offloader(Arc::new(Offload));
    let r =
        ex.execute(&call("echo", json!({"text": "x", "times": 500})), ctx(), &CallOptions::default()).await;
    assert_eq!(r.locator.as_deref(), Some("out_1"));
    assert_eq!(r.result.content, "echo: 500 bytes stored\nlocator: out_1");
    assert!(r.truncated);
    let r = ex.execute(&call("echo", json!({"text": "small"})), ctx(), &CallOptions::default()).await;
    assert_eq!(r.locator, None);
}

/// A tool whose output is sized for the context (`sized_output`, declared by the tool, whatever
/// its name) is never offloaded.
#[tokio::test]
async fn a_tool_that_sizes_its_own_output_is_never_offloaded() {
    let ex = executor(Arc::new(AutoApprove), vec![]).with_offloader(Arc::new(Offload));
    let mut registry = ToolRegistry::new();
    for (name, sized_output) in [("pages", true), ("dumps", false)] {
        let annotations = ToolAnnotations { sized_output, ..ToolAnnotations::read_only() };
        registry
            .register(typed(
                tackle_tools::tool_fn(name, "Prints a lot.", |_: NoArgs| async { "y".repeat(150) })
                    .annotations(annotations),
            ))
            .unwrap();
    }
    ex.replace_registry(registry);
    let r = ex.execute(&call("pages", json!({})), ctx(), &CallOptions::default()).await;
    assert_eq!(r.locator, None, "{}", r.result.content);
    let r = ex.execute(&call("dumps", json!({})), ctx(), &CallOptions::default()).await;
    assert_eq!(
        r.locator.as_deref(),
        Some("out_1"),
        "the same output of a tool that does not say so is offloaded"
    );
}

#[tokio::test]
async fn oversized_arguments_are_refused_before_parsing_further() {
    let ex = executor(Arc::new(AutoApprove), vec![]);
    let huge = "x".repeat(300 * 1024);
    let r = ex.execute(&call("echo", json!({"text": huge})), ctx(), &CallOptions::default()).await;
    assert_eq!(envelope(&r).category, ErrorCategory::InvalidArgs);
    assert!(envelope(&r).message.contains("limit"));
}
