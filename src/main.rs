//! `xagent-adb-connector`: parses the command line and hands over to the library. No logic of its own.

use std::process::ExitCode;
use std::sync::Arc;

use xagent_adb_connector::cli::{self, Cli, Command, LogFormat};
use xagent_adb_connector::config::{self, ConfigError};
use xagent_adb_connector::device::adb::AdbBackend;
use xagent_adb_connector::ops;
use xagent_adb_connector::run;
use xagent_adb_connector::tools::Registry;

/// `to_sink`: the demo's log goes where [`ops::log_sink`] says (its state dir once it has one), without colour.
fn init_logging(format: LogFormat, to_sink: bool) {
    use std::io::IsTerminal;
    let mut filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    // Libraries that log payloads at debug/trace (tungstenite: every frame, i.e. typed text and download URLs;
    // hyper: request heads; adb_client: shell commands) are capped at info whatever RUST_LOG says, so no secret
    // reaches a log at any level. Our own records never carry payloads.
    for target in ["tungstenite", "tokio_tungstenite", "hyper", "hyper_util", "adb_client", "multer"] {
        if let Ok(d) = format!("{target}=info").parse() {
            filter = filter.add_directive(d);
        }
    }
    // A broken stderr (journald restarted, a closed pipe) must never panic or abort the connector, and colour codes
    // only belong on a terminal.
    let builder = tracing_subscriber::fmt().with_env_filter(filter).log_internal_errors(false);
    if to_sink {
        let builder = builder.with_writer(ops::log_sink::Sink).with_ansi(false);
        match format {
            LogFormat::Text => builder.init(),
            LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).init(),
        }
        return;
    }
    let builder = builder.with_writer(std::io::stderr).with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).init(),
    }
}

fn fail(e: ConfigError) -> ExitCode {
    eprintln!("error: {}", e.message);
    ExitCode::from(e.code as u8)
}

/// The runtime. Blocking threads serve SQLite writes (serialised by the store's mutex anyway), file I/O and JPEG
/// encoding: a burst of calls ending together (hundreds of stuck calls timing out at once) must not leave hundreds of
/// idle threads behind, so the pool is small and an idle thread exits after a second instead of tokio's ten.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(32)
        .thread_keep_alive(std::time::Duration::from_secs(1))
        .build()
        .expect("tokio runtime")
}

/// Serves until SIGTERM/Ctrl-C, then drains.
async fn serve_until_signal(running: run::Running) -> ExitCode {
    let trigger = running.trigger();
    tokio::spawn(async move {
        run::signal().await;
        tracing::info!("shutdown requested; draining");
        let _ = trigger.send(true);
    });
    running.wait().await;
    tracing::info!("stopped");
    ExitCode::SUCCESS
}

/// glibc keeps freed large buffers in per-thread arenas once its dynamic mmap threshold has grown: screenshots
/// (10 MB frames) decoded on many blocking threads then pinned ~35 MB per arena — 370 MB peak RSS at 64 phones in
/// `BENCHMARKS.md`. A fixed 1 MiB threshold serves every large buffer by mmap, returned to the OS on free.
fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; called once before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}

/// Raises the soft limit on open files to the hard one (issue 48: at the 1024 a systemd service gets by default,
/// sockets held by a hanging webhook made `accept` fail). `(before, after)` soft limits, `None` where it cannot.
#[allow(clippy::unnecessary_cast)] // rlim_t is u64 on Linux, not everywhere
fn raise_open_files_limit() -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        let mut l = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: getrlimit/setrlimit only read and write the struct passed, which lives on this stack frame.
        unsafe {
            if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) != 0 {
                return None;
            }
            let before = l.rlim_cur as u64;
            if l.rlim_cur < l.rlim_max {
                l.rlim_cur = l.rlim_max;
                if libc::setrlimit(libc::RLIMIT_NOFILE, &l) != 0 {
                    return Some((before, before));
                }
            }
            Some((before, l.rlim_cur as u64))
        }
    }
    #[cfg(not(unix))]
    None
}

/// The subcommand named on the command line (the first word that is not an option or an option's value).
fn subcommand_word() -> Option<String> {
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--log-format" {
            args.next();
        } else if !a.starts_with('-') {
            return Some(a);
        }
    }
    None
}

/// Parses the command line; `--help`/`--version` output into a closed pipe ends quietly (see `ops::out`).
fn parse() -> Cli {
    use clap::FromArgMatches;
    match cli::command().try_get_matches().and_then(|m| Cli::from_arg_matches(&m)) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            ops::out::line(format_args!("{}", e.render().to_string().trim_end()));
            ops::out::flush();
            std::process::exit(0);
        }
        Err(e) => e.exit(),
    }
}

/// Whether `flag` is on the command line or `var` in the environment (the installed service's settings included):
/// `doctor` asks a running connector only for what nobody named.
fn given(flag: &str, var: &str) -> bool {
    let eq = format!("{flag}=");
    std::env::var_os(var).is_some() || std::env::args().any(|a| a == flag || a.starts_with(&eq))
}

fn main() -> ExitCode {
    tune_allocator();
    // Inspecting commands check the installed service, with its settings (before any thread starts).
    let service = match subcommand_word().as_deref() {
        Some("doctor" | "devices" | "audit" | "call" | "mcp" | "users") => ops::settings::apply(),
        _ => ops::settings::ServiceSettings::default(),
    };
    let cli = parse();
    init_logging(cli.log_format, matches!(cli.command, Command::Demo(_)));
    if let (Some(p), false) = (&service.problem, matches!(cli.command, Command::Doctor(_))) {
        eprintln!("note: {p}");
    }
    match cli.command {
        Command::Card(args) => {
            let (api_key, policy) = match (
                config::resolve_api_key(args.key.api_key_file.as_deref()),
                config::load_policy(args.policy.as_deref()),
            ) {
                (Ok(k), Ok(p)) => (k, p),
                (Err(e), _) | (_, Err(e)) => return fail(e),
            };
            let adb = AdbBackend::new(Vec::new());
            let registry = Registry::device_tools_with(&adb, &Arc::new(policy));
            let card = xagent_adb_connector::channels::Hub::build_card(&registry, adb.as_ref(), api_key.is_some());
            ops::out::line(format_args!("{}", serde_json::to_string_pretty(&card).expect("card serialises")));
            ops::out::flush();
            ExitCode::SUCCESS
        }
        Command::Serve(args) => {
            let resolved = match cli::resolve_serve(&args) {
                Ok(r) => r,
                Err(e) => return fail(e),
            };
            let files = raise_open_files_limit();
            runtime().block_on(async move {
                if let Some((before, after)) = files {
                    tracing::info!(before, after, "open files limit (soft) raised to the hard limit");
                }
                match run::start_adb(resolved).await {
                    Ok(running) => serve_until_signal(running).await,
                    Err(e) => fail(e),
                }
            })
        }
        Command::Devices(args) => {
            let servers = match config::resolve_adb_servers(&args.adb.adb_servers) {
                Ok(s) => s,
                Err(e) => return fail(e),
            };
            let code = runtime().block_on(ops::devices::run(&servers, &args.data_dir));
            ops::out::flush();
            ExitCode::from(code as u8)
        }
        Command::Doctor(args) => {
            // Unlike `serve`, an unreadable key or a bad policy is one failed check each, not an abort.
            let servers = match config::resolve_adb_servers(&args.adb.adb_servers) {
                Ok(s) => s,
                Err(e) => return fail(e),
            };
            let api_key = config::resolve_api_key(args.key.api_key_file.as_deref()).map_err(|e| {
                let denied = args.key.api_key_file.as_deref().is_some_and(|p| {
                    std::fs::File::open(p).is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
                });
                (e.message, denied)
            });
            let input = ops::doctor::DoctorInput {
                servers: &servers,
                data_dir: &args.data_dir,
                listen: args.listen,
                api_key,
                key_file: args.key.api_key_file.as_deref(),
                policy: config::load_policy(args.policy.as_deref()).map(|_| ()).map_err(|e| e.message),
                settings: &service,
                adb_given: given("--adb-server", "XAGENT_ADB_SERVER"),
                data_dir_given: given("--data-dir", "XAGENT_ADB_DATA_DIR"),
            };
            let code = runtime().block_on(ops::doctor::run(input));
            ops::out::flush();
            ExitCode::from(code as u8)
        }
        Command::Demo(args) => ExitCode::from(runtime().block_on(ops::demo::run(args)) as u8),
        Command::Sim(args) => ExitCode::from(runtime().block_on(ops::demo::run_sims(args)) as u8),
        Command::Call(args) => {
            if args.list {
                for line in ops::call::list() {
                    ops::out::line(format_args!("{line}"));
                }
                ops::out::flush();
                return ExitCode::SUCCESS;
            }
            let api_key = match config::resolve_api_key(args.key.api_key_file.as_deref()) {
                Ok(k) => k,
                Err(e) => return fail(e),
            };
            let url = args.url.clone().unwrap_or_else(ops::call::default_url);
            if args.session {
                if !args.args.is_empty() {
                    let message = "--session reads its calls from stdin, one per line; give no TOOL or ARG".into();
                    return fail(ConfigError { code: config::exit::USAGE, message });
                }
                let input = ops::call::SessionInput {
                    url: &url,
                    api_key,
                    serial: args.serial.as_deref(),
                    timeout: args.timeout,
                };
                let code = runtime().block_on(ops::call::run_session(input));
                ops::out::flush();
                return ExitCode::from(code as u8);
            }
            let tool = args.tool.clone().unwrap_or_default();
            if ops::call::known_tool(&tool).is_none() {
                return fail(ConfigError { code: config::exit::USAGE, message: ops::call::unknown_tool(&tool) });
            }
            let arguments = match ops::call::build_arguments(&tool, args.json.as_deref(), &args.args) {
                Ok(a) => a,
                Err(e) => return fail(ConfigError { code: e.code, message: e.message }),
            };
            let input = ops::call::CallInput {
                url: &url,
                api_key,
                tool: &tool,
                arguments,
                serial: args.serial.as_deref(),
                out: args.out.as_deref(),
                timeout: args.timeout,
            };
            let code = runtime().block_on(ops::call::run(input));
            ops::out::flush();
            ExitCode::from(code as u8)
        }
        Command::Mcp(args) => {
            let api_key = match config::resolve_api_key(args.key.api_key_file.as_deref()) {
                Ok(k) => k,
                Err(e) => return fail(e),
            };
            let url = args.url.clone().unwrap_or_else(ops::call::default_url);
            ExitCode::from(runtime().block_on(ops::mcp::run(&url, api_key)) as u8)
        }
        Command::Users(args) => {
            let code = match &args.action {
                cli::UsersAction::Add { name, role, replace } => ops::users::add(&args.data_dir, name, role, *replace),
                cli::UsersAction::List => ops::users::list(&args.data_dir),
                cli::UsersAction::Remove { name } => ops::users::remove(&args.data_dir, name),
            };
            ops::out::flush();
            ExitCode::from(code as u8)
        }
        Command::Audit(args) => {
            let code = match args.action {
                cli::AuditAction::Verify => ops::audit::verify(&args.data_dir, args.audit_retention),
                cli::AuditAction::Tail { lines, json } => ops::audit::tail(&args.data_dir, lines, json),
            };
            ops::out::flush();
            ExitCode::from(code as u8)
        }
    }
}
