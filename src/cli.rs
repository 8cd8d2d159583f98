//! Command line: subcommands and flags with `XAGENT_ADB_*` environment fallbacks, parsed into configuration
//! ([`crate::config`], which holds the checks and the value grammars). Only `main.rs` and `ops/` import this.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::config::{
    check_exposure, exit, load_policy, parse_duration, parse_listen, parse_size, parse_size_usize, resolve_adb_servers,
    resolve_api_key, ConfigError, Resolved,
};

const AFTER_HELP: &str = "\
Environment:
  XAGENT_CONNECTOR_API_KEY   system API key (instead of --api-key-file; never a flag value)
  RUST_LOG                   log filter, e.g. info or xagent_adb_connector=debug

Exit codes:
  0 ok · 1 runtime failure · 2 bad command line · 3 unusable configuration · 4 cannot listen
  Output into a closed pipe (`card | head -c 100`) ends the command quietly with 0.

doctor, devices, audit, call and mcp read the installed service's settings when present:
/etc/xagent-adb-connector/env, its api-key, /var/lib/xagent-adb-connector (XAGENT_ADB_CONFIG_DIR
moves them); flags and environment variables win.

Docs: README.md (start here), docs/ (configuration, commands, wall, policy, phones, storage, fleet,
MCP), device-profile/README.md (the protocol profile and tool catalog).";

#[derive(Parser, Debug)]
#[command(
    name = "xagent-adb-connector",
    version = crate::build_info::LONG_VERSION,
    about = "xAgent Connector Server for Android devices over ADB (protocol 3.0, profile xagent.device.v1)",
    after_help = AFTER_HELP
)]
pub struct Cli {
    /// Log output format.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text, env = "XAGENT_ADB_LOG_FORMAT")]
    pub log_format: LogFormat,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run the connector: control plane, data plane (WebSocket) and transfer plane on one port.
    #[command(after_long_help = SERVE_HELP)]
    Serve(ServeArgs),
    /// Print the Connector Card JSON that GET /connector-card.json serves, and exit.
    Card(CardArgs),
    /// List every device the adb server(s) see, with its state and the channel that holds it.
    Devices(DevicesArgs),
    /// Check adb servers, devices, data dir, key, port and clock; print a fix for each problem.
    #[command(long_about = DOCTOR_ABOUT, after_long_help = DOCTOR_HELP)]
    Doctor(ServeArgs),
    /// Try it without a phone: simulated phones + a private adb server + the connector, and a scripted session.
    Demo(DemoArgs),
    /// Run simulated Android phones (ADB transport protocol) for `adb connect`, until Ctrl-C.
    Sim(SimArgs),
    /// The audit log of device actions: `verify` the hash chain, or `tail` recent records.
    Audit(AuditArgs),
    /// Call one tool on a phone through a running connector (as xAgent would) and print its result as JSON.
    #[command(after_help = CALL_HELP)]
    Call(CallArgs),
    /// Operator accounts of the device wall (name, role, salted password hash in <data dir>/users.json).
    #[command(after_help = USERS_HELP)]
    Users(UsersArgs),
    /// A stdio MCP server for editors and agents that start one: forwards to a running connector's /mcp.
    #[command(
        after_help = "Claude Desktop, Cursor, VS Code: {\"command\": \"xagent-adb-connector\", \"args\": [\"mcp\", \"--url\", \"http://127.0.0.1:8790\", \"--api-key-file\", \"/path/to/key\"]}"
    )]
    Mcp(McpArgs),
}

const SERVE_HELP: &str = "\
Examples:
  xagent-adb-connector serve
      loopback only, no key: for trying it and for `call` on the same box
  xagent-adb-connector serve --listen 0.0.0.0:8790 --api-key-file /etc/xagent-adb-connector/api-key
      what the systemd unit runs: reachable by xAgent, every request needs the key
  xagent-adb-connector serve --adb-server 127.0.0.1:5037 --adb-server 10.0.0.12:5037 --policy policy.json
      front the phones of two boxes, with an operator policy
  XAGENT_ADB_CACHE_MAX_BYTES=64MiB xagent-adb-connector serve
      every flag has an environment variable (shown with it), for the unit's env file

Sizes take B, KiB, MiB or GiB (1MiB = 1048576); durations ms, s, m or h (90s, 15m, 1h).
`doctor` takes the same flags and checks what `serve` would use. -h shows the flags only.";

const DOCTOR_ABOUT: &str =
    "Check what `serve` would use, with the same flags and environment, and print a fix for each \
problem.

It only reads: it changes no file, no setting and no phone (it opens the state database read-only and asks the adb \
servers what they list). On an installed box run it with sudo, so that it reads the service's settings and key \
(/etc/xagent-adb-connector/env, api-key) and the state dir (/var/lib/xagent-adb-connector) as the service does; \
without, every check it may not read is reported as a permission problem. Exit status 0 when every check passed \
(warnings allowed), 1 when one failed.";

const DOCTOR_HELP: &str = "\
What it checks, in the order it prints them:
  settings   the installed service's env file (when there is one), and that the --policy file parses
  adb        the adb binary; each --adb-server answers (its protocol version, the user running it); each
             device it lists and its state, with the fix for unauthorized and offline phones
  state      the data dir and whether the service's user can write it, where the file cache lives (memory or
             disk), the state database (opened read-only) and its schema version
  security   a system API key is configured and readable (its value is never printed), the key file's mode
  network    --listen is free, or held by a running connector (asked on /health)

Without --adb-server and --data-dir (flags, environment or the installed service's settings), a connector running
on --listen is asked first (/health, /api/v1/devices): its adb servers are checked instead of 127.0.0.1:5037 and its
state is left to it instead of ./data; the first lines say which connector was asked.
  clock      the system clock is past 2024 (a Pi without RTC starts in 1970 until NTP syncs)

Examples:
  xagent-adb-connector doctor
  sudo xagent-adb-connector doctor            on an installed box: the service's settings and key
  xagent-adb-connector doctor --adb-server 10.0.0.12:5037";

const CALL_HELP: &str = "\
How it works:
  Opens the connector's WebSocket (GET /ws) and sends what xAgent sends: connector.hello,
  channel.open, auth.start (flow adb_device: any free online phone, or --serial), tool.invoke,
  then auth.logout and channel.close, so the phone is held only for the call (also on an error,
  --timeout or Ctrl-C). The result is printed on stdout as JSON (indented on a terminal, one
  compact line otherwise); a file in it (screenshot, pulled file) gets its one-time download URL
  printed on stderr, or is saved with --out.

What one call cannot do (use --session):
  Each call binds a phone, acts and gives it back, and giving it back frees the channel's
  observations: an observation_id from one call (android_observe, android_ui_dump, an error's
  candidates) is unknown to the next, so `element: {index, observation_id}` fails. The next
  call may also get another phone when several are free (pass --serial).

--session:
  One binding for many calls: one call per line on stdin, `TOOL_ID [JSON_OBJECT | key=value…]`
  (quoted as on the command line: key=\"a b\", element:='{\"text\":\"OK\"}'; blank lines and lines
  starting with # are skipped; @obs stands for the newest observation_id: an action's effect.tree,
  else the result's, else an error's candidates'), one JSON line per call on stdout: the result, or
  {\"error\":{\"code\",\"message\",\"details\"}} (the session goes on). The phone is given back at
  the end of input, on Ctrl-C or SIGTERM. --timeout applies to each call.

Arguments:
  key=value     typed by the tool's input schema: x=100 is a number for android_tap, text=123
                stays text for android_input_text, only_interactive=true is a boolean
                (`card` shows every schema)
  key:=JSON     raw JSON, as in httpie: element:='{\"text\":\"OK\"}'
  --json '{…}'  all arguments as one object (key=value words are applied on top)

Examples:
  xagent-adb-connector call android_device_status
  xagent-adb-connector call android_tap x=100 y=200 --serial R58N123ABC
  xagent-adb-connector call android_ui_dump only_interactive=true | jq '.elements[].text'
  xagent-adb-connector call android_tap element:='{\"text\":\"OK\",\"nth\":0}'
  xagent-adb-connector call android_screenshot --out screen.jpg
  xagent-adb-connector call android_input_text --json '{\"text\":\"hello\"}' --api-key-file key
  xagent-adb-connector call --list
  printf '%s\\n' 'android_observe' 'android_tap {\"element\":{\"index\":3,\"observation_id\":\"@obs\"}}' \\
    | xagent-adb-connector call --session

Exit status:
  0 the tool succeeded (--session: the input ended; each call's outcome is on its line) · 1 it
  failed (its error code and message are printed, e.g. device_busy, invalid_arguments) or the
  connector could not be reached or refused the key (--session: the session broke or was
  interrupted) · 2 bad command line, unknown tool · 3 unreadable or empty key file

Run as root on an installed box, it uses the service's key (/etc/xagent-adb-connector/api-key).";

/// `serve --help` in groups (`doctor` takes the same flags and gets the same groups). Every flag of
/// [`ServeArgs`] belongs to one; a unit test keeps that true when a flag is added.
const SERVE_HEADINGS: &[(&str, &[&str])] = &[
    (
        "Network and access",
        &[
            "listen",
            "api_key_file",
            "allowed_hosts",
            "allow_no_api_key_on_network",
            "max_connections_per_ip",
            "header_timeout",
            "body_timeout",
        ],
    ),
    (
        "Phones",
        &[
            "adb_servers",
            "allow_serials",
            "policy",
            "capture_compression",
            "capture_streams",
            "phone_helper",
            "recover_command",
            "recover_command_timeout",
            "recover_wait",
            "recover_offline_after",
        ],
    ),
    (
        "Agents (the data plane)",
        &[
            "lease_grace",
            "max_message_bytes",
            "drain_timeout",
            "tool_deadline_max",
            "max_sessions",
            "max_mcp_sessions",
            "mcp_unbound_idle",
            "max_channels",
            "hello_timeout",
            "ws_write_timeout",
        ],
    ),
    (
        "State and files",
        &[
            "data_dir",
            "file_ttl",
            "cache_dir",
            "cache_max_bytes",
            "cache_max_files",
            "upload_max_bytes",
            "audit_max_records",
            "audit_retention",
            "audit_channel_budget",
            "audit_archive_max_bytes",
        ],
    ),
    (
        "Device wall and operators",
        &[
            "wall_session_ttl",
            "wall_secure_cookie",
            "wall_thumbnail_interval",
            "wall_takeover_idle",
            "wall_live_write_timeout",
            "trusted_user_header",
            "trusted_proxies",
            "notify_url",
        ],
    ),
];

/// The first sentence of a flag's help, when there is more after it: up to the first `. ` or `; ` that is not
/// inside parentheses and does not end an abbreviation (`e.g.`, `i.e.`).
fn first_sentence(help: &str) -> Option<String> {
    let mut depth = 0i32;
    let bytes = help.as_bytes();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'(' => depth += 1,
            b')' => depth -= 1,
            b'.' | b';' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                let head = &help[..i];
                if head.ends_with("e.g") || head.ends_with("i.e") {
                    continue;
                }
                return Some(head.to_owned());
            }
            _ => {}
        }
    }
    None
}

/// The command line as `main` parses it: the derived [`Cli`] with `serve`'s and `doctor`'s flags in headed groups.
pub fn command() -> clap::Command {
    use clap::CommandFactory;
    let group = |mut cmd: clap::Command| {
        for (heading, ids) in SERVE_HEADINGS {
            for id in *ids {
                cmd = cmd.mut_arg(*id, |a| a.help_heading(*heading));
            }
        }
        // `-h` lists each flag with its first sentence, `--help` with all of it (ripgrep's split).
        let ids: Vec<String> = cmd.get_arguments().map(|a| a.get_id().to_string()).collect();
        for id in ids {
            cmd = cmd.mut_arg(id, |a| {
                let Some(full) = a.get_help().map(ToString::to_string) else { return a };
                match first_sentence(&full) {
                    Some(short) if a.get_long_help().is_none() => a.help(short).long_help(full),
                    _ => a,
                }
            });
        }
        cmd
    };
    Cli::command().mut_subcommand("serve", group).mut_subcommand("doctor", group)
}

#[derive(Args, Debug, Clone)]
pub struct CallArgs {
    /// The tool to call, e.g. android_tap, android_ui_dump, android_screenshot (`call --list` lists them).
    #[arg(value_name = "TOOL", required_unless_present_any = ["session", "list"])]
    pub tool: Option<String>,
    /// Tool arguments: key=value (typed by the tool's schema) or key:=JSON (raw JSON).
    #[arg(value_name = "ARG")]
    pub args: Vec<String>,
    /// All tool arguments as one JSON object; key=value words are applied on top.
    #[arg(long, value_name = "JSON")]
    pub json: Option<String>,
    /// The connector's base URL (plain HTTP; run `call` on the connector's box). Default: the installed
    /// service's --listen (XAGENT_ADB_LISTEN, 0.0.0.0 read as 127.0.0.1), else http://127.0.0.1:8790.
    #[arg(long, value_name = "URL", env = "XAGENT_ADB_URL")]
    pub url: Option<String>,
    #[command(flatten)]
    pub key: KeyArgs,
    /// Bind this phone (its serial as `devices` lists it) instead of any free online one.
    #[arg(long, value_name = "SERIAL")]
    pub serial: Option<String>,
    /// Save the file the tool returns (screenshot, pulled file) to FILE instead of printing its download URL.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Give up after this long (connecting, binding, the tool and the download together; with --session, each
    /// call).
    #[arg(long, value_name = "DURATION", default_value = "6m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Keep one phone bound for many calls, read one call per line from stdin (TOOL_ID [JSON_OBJECT |
    /// key=value…]) and print one JSON line per call; the phone is given back at the end of input or on Ctrl-C.
    #[arg(long, conflicts_with_all = ["tool", "json", "out", "list"])]
    pub session: bool,
    /// Print the tools this binary knows, one line each, and exit.
    #[arg(long, conflicts_with_all = ["tool", "json", "out"])]
    pub list: bool,
}

#[derive(Args, Debug, Clone)]
pub struct McpArgs {
    /// The connector's base URL (plain HTTP; `/mcp` is added when the URL has no path). Default: as `call`.
    #[arg(long, value_name = "URL", env = "XAGENT_ADB_URL")]
    pub url: Option<String>,
    #[command(flatten)]
    pub key: KeyArgs,
}

#[derive(Args, Debug, Clone)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub action: AuditAction,
    /// The connector's data dir.
    #[arg(long, value_name = "DIR", default_value = "./data", env = "XAGENT_ADB_DATA_DIR", global = true)]
    pub data_dir: PathBuf,
    /// The retention period `serve` keeps (its --audit-retention): `verify` fails when younger records are missing.
    #[arg(long, value_name = "DURATION", default_value = "90d", value_parser = parse_duration, env = "XAGENT_ADB_AUDIT_RETENTION", global = true)]
    pub audit_retention: Duration,
}

#[derive(Subcommand, Debug, Clone)]
pub enum AuditAction {
    /// Check the whole chain; exit 1 naming the first tampered record.
    Verify,
    /// Print the last N records (seq, UTC time, channel, tool_call_id, device, tool, result, redacted arguments).
    Tail {
        /// How many of the newest records to print.
        #[arg(short = 'n', long, value_name = "N", default_value_t = 20)]
        lines: u64,
        /// One JSON object per line instead of the table (for scripts).
        #[arg(long)]
        json: bool,
    },
}

const USERS_HELP: &str = "\
Roles: viewer watches the wall; operator also takes phones over and returns them; admin also releases an
agent's binding. The system API key stays the admin named api-key (automation).
Examples:
  sudo xagent-adb-connector users add ana --role operator        asks for the password twice
  printf '%s\\n' \"$PW\" | xagent-adb-connector users add bot --role viewer --data-dir ./data
  xagent-adb-connector users list
  xagent-adb-connector users remove ana
The wall reads the file again whenever it changes: no restart. A removed operator's open sessions end at
their next request; a changed role applies at once.";

#[derive(Args, Debug, Clone)]
pub struct UsersArgs {
    #[command(subcommand)]
    pub action: UsersAction,
    /// The connector's data dir (users.json is kept there, 0600).
    #[arg(long, value_name = "DIR", default_value = "./data", env = "XAGENT_ADB_DATA_DIR", global = true)]
    pub data_dir: PathBuf,
}

#[derive(Subcommand, Debug, Clone)]
pub enum UsersAction {
    /// Add an operator. The password comes from the terminal (asked twice, not shown) or the first line of stdin.
    Add {
        /// The name (1 to 64 of A-Z a-z 0-9 . _ @ -), as audit records will show it.
        name: String,
        /// What the operator may do on the wall.
        #[arg(long, value_parser = ["viewer", "operator", "admin"])]
        role: String,
        /// Replace an existing operator of that name (a new password, or a new role).
        #[arg(long)]
        replace: bool,
    },
    /// List the operators and their roles (never a password hash).
    List,
    /// Remove an operator.
    Remove {
        /// The operator's name.
        name: String,
    },
}

#[derive(Args, Debug, Clone)]
pub struct CardArgs {
    #[command(flatten)]
    pub key: KeyArgs,
    /// Operator policy (JSON) deciding which tools the card declares.
    #[arg(long, value_name = "FILE", env = "XAGENT_ADB_POLICY")]
    pub policy: Option<PathBuf>,
}

/// The adb servers to use (shared by `serve`, `doctor` and `devices`).
#[derive(Args, Debug, Clone)]
pub struct AdbServerArgs {
    /// adb server to use, HOST:PORT; repeat to front the adb servers of several boxes.
    #[arg(
        long = "adb-server",
        value_name = "HOST:PORT",
        default_value = "127.0.0.1:5037",
        env = "XAGENT_ADB_SERVER",
        value_delimiter = ','
    )]
    pub adb_servers: Vec<String>,
}

#[derive(Args, Debug, Clone)]
pub struct DevicesArgs {
    #[command(flatten)]
    pub adb: AdbServerArgs,
    /// The connector's data dir, to show which channel holds each device.
    #[arg(long, value_name = "DIR", default_value = "./data", env = "XAGENT_ADB_DATA_DIR")]
    pub data_dir: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct DemoArgs {
    /// Address for the connector. Default: 127.0.0.1:8790, or a free port when that one is taken (the demo says
    /// which); a given address that is taken is an error.
    #[arg(long, value_name = "ADDR", value_parser = parse_listen)]
    pub listen: Option<SocketAddr>,
    /// How many simulated phones (a Pixel 7, a Galaxy A54, a Redmi 12C, then again).
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub phones: u16,
    /// State of the demo (its own, apart from a real installation's). Default: a fresh temporary directory,
    /// removed when the demo stops.
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Protect the demo with this system API key (first line of FILE), to try the wall's login page and Bearer
    /// auth. Default: no key (everything open, on loopback).
    #[arg(long, value_name = "FILE")]
    pub api_key_file: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct SimArgs {
    /// Address of the first phone; the others take the following ports. Not 5555–5585: the adb server takes
    /// loopback ports there for emulators and would list each phone a second time as `emulator-NNNN`.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:6520", value_parser = parse_listen)]
    pub listen: SocketAddr,
    /// How many phones.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub count: u16,
    /// Each phone also listens on the next port: after `adb connect` to both, one phone under two serials (as a
    /// real phone on USB and Wi-Fi debugging at once).
    #[arg(long)]
    pub two_paths: bool,
}

#[derive(Args, Debug, Clone)]
pub struct KeyArgs {
    /// File holding the system API key (first line). When no key is configured, /health, /ws and uploads are open.
    #[arg(long, value_name = "FILE", env = "XAGENT_ADB_API_KEY_FILE")]
    pub api_key_file: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on (HTTP and WebSocket), IP:PORT or HOST:PORT (a host name is resolved once at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8790", env = "XAGENT_ADB_LISTEN", value_parser = parse_listen)]
    pub listen: SocketAddr,

    /// Directory for the SQLite state and the file cache (created if missing).
    #[arg(long, value_name = "DIR", default_value = "./data", env = "XAGENT_ADB_DATA_DIR")]
    pub data_dir: PathBuf,

    #[command(flatten)]
    pub key: KeyArgs,

    #[command(flatten)]
    pub adb: AdbServerArgs,

    /// Only devices with these serials may be bound (repeatable; default: any).
    #[arg(long = "allow-serial", value_name = "SERIAL", env = "XAGENT_ADB_ALLOW_SERIALS", value_delimiter = ',')]
    pub allow_serials: Vec<String>,

    /// Reconnect grace of a connector instance after its last data plane closes (protocol §8.2), e.g. 1h, 90s.
    #[arg(long, value_name = "DURATION", default_value = "1h", value_parser = parse_duration, env = "XAGENT_ADB_LEASE_GRACE")]
    pub lease_grace: Duration,

    /// Largest accepted WebSocket message (e.g. 1MiB); larger ones are refused and the socket closed (1009).
    #[arg(long, value_name = "SIZE", default_value = "1MiB", value_parser = parse_size_usize, env = "XAGENT_ADB_MAX_MESSAGE_BYTES")]
    pub max_message_bytes: usize,

    /// How long running tool calls may take to finish after SIGTERM/Ctrl-C.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, env = "XAGENT_ADB_DRAIN_TIMEOUT")]
    pub drain_timeout: Duration,

    /// Caps every tool's deadline (e.g. 60s: a stuck install gives up after a minute instead of 5). Default: each
    /// tool's own deadline (10 s for a tap … 300 s for an install). A call past it answers `device_timeout` and its
    /// device command is hung up.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, env = "XAGENT_ADB_TOOL_DEADLINE_MAX")]
    pub tool_deadline_max: Option<Duration>,

    /// How long a cached file (screenshot, pulled file, upload) and its one-time download URL stay valid.
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration, env = "XAGENT_ADB_FILE_TTL")]
    pub file_ttl: Duration,

    /// Where screenshots, pulled files and uploads are cached until downloaded or expired. Default: a folder under
    /// systemd's RuntimeDirectory (/run), $XDG_RUNTIME_DIR or /dev/shm — memory, so that screenshots never wear the
    /// SD card; a restart empties it. A directory on disk keeps files (and their index) across restarts.
    #[arg(long, value_name = "DIR", env = "XAGENT_ADB_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,

    /// File cache capacity (e.g. 512MiB); storing beyond it evicts the oldest files first.
    #[arg(long, value_name = "SIZE", default_value = "512MiB", value_parser = parse_size, env = "XAGENT_ADB_CACHE_MAX_BYTES")]
    pub cache_max_bytes: u64,

    /// File cache capacity in files; storing beyond it evicts the oldest files first.
    #[arg(long, value_name = "N", default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..), env = "XAGENT_ADB_CACHE_MAX_FILES")]
    pub cache_max_files: u64,

    /// Largest file accepted by POST /files/uploads (e.g. 256MiB; larger ones get 413).
    #[arg(long, value_name = "SIZE", default_value = "256MiB", value_parser = parse_size, env = "XAGENT_ADB_UPLOAD_MAX_BYTES")]
    pub upload_max_bytes: u64,

    /// Operator policy (JSON): allowed serials, disabled tools, opt-in risky tools (docs/policy.md).
    #[arg(long, value_name = "FILE", env = "XAGENT_ADB_POLICY")]
    pub policy: Option<PathBuf>,

    /// Command run (without a shell, `{serial}` replaced) when reconnecting a stuck phone did not help, e.g. a
    /// hub port power cycle: `/usr/local/bin/cycle-port {serial}`. At most once per 10 min per phone, killed after
    /// --recover-command-timeout.
    #[arg(long, value_name = "COMMAND", env = "XAGENT_ADB_RECOVER_COMMAND")]
    pub recover_command: Option<String>,

    /// Longest the recover command may run before it is killed.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, env = "XAGENT_ADB_RECOVER_COMMAND_TIMEOUT")]
    pub recover_command_timeout: Duration,

    /// How long a stuck phone gets to answer again after each recovery step (reconnect, recover command) before
    /// the next one.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration, env = "XAGENT_ADB_RECOVER_WAIT")]
    pub recover_wait: Duration,

    /// How long the adb server may list a phone `offline` before the recovery ladder starts on it (a replug or a
    /// reboot takes well under the default; raise it for phones slow to boot, lower it to act sooner). 2s to 1h.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = parse_duration, env = "XAGENT_ADB_RECOVER_OFFLINE_AFTER")]
    pub recover_offline_after: Duration,

    /// Open WebSocket sessions at once; more upgrades get 503 too_many_sessions.
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=100_000), env = "XAGENT_ADB_MAX_SESSIONS")]
    pub max_sessions: u64,

    /// Open MCP sessions (`/mcp`) at once, a budget apart from --max-sessions: when it is spent, the least recently
    /// used session with no call running is ended to make room. A session holding no phone ends after
    /// --mcp-unbound-idle without a request, one holding a phone after 30 minutes.
    #[arg(long, value_name = "N", default_value_t = 32, value_parser = clap::value_parser!(u64).range(1..=10_000), env = "XAGENT_ADB_MAX_MCP_SESSIONS")]
    pub max_mcp_sessions: u64,

    /// An MCP session holding no phone and running no call ends after this long without a request (a crash-looping
    /// editor's `initialize` alone creates one).
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = parse_duration, env = "XAGENT_ADB_MCP_UNBOUND_IDLE")]
    pub mcp_unbound_idle: Duration,

    /// Channels kept at once (open or waiting for their instance); channel.open beyond is rate_limited.
    #[arg(long, value_name = "N", default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000), env = "XAGENT_ADB_MAX_CHANNELS")]
    pub max_channels: u64,

    /// Open TCP connections from one IP address; more are closed at once.
    #[arg(long, value_name = "N", default_value_t = 128, value_parser = clap::value_parser!(u64).range(1..=100_000), env = "XAGENT_ADB_MAX_CONNECTIONS_PER_IP")]
    pub max_connections_per_ip: u64,

    /// Time a connection has to send a complete HTTP request head.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration, env = "XAGENT_ADB_HEADER_TIMEOUT")]
    pub header_timeout: Duration,

    /// Time a small request body (the wall login, any JSON; not uploads) has to arrive whole after its head.
    #[arg(long, value_name = "DURATION", default_value = "5s", value_parser = parse_duration, env = "XAGENT_ADB_BODY_TIMEOUT")]
    pub body_timeout: Duration,

    /// Time a WebSocket session has to complete connector.hello before it is closed (1008).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration, env = "XAGENT_ADB_HELLO_TIMEOUT")]
    pub hello_timeout: Duration,

    /// Longest a write to a WebSocket peer may stall (peer not reading) before the session is closed.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration, env = "XAGENT_ADB_WS_WRITE_TIMEOUT")]
    pub ws_write_timeout: Duration,
    /// Lifetime of a device-wall login (the session cookie expires with it).
    #[arg(long, value_name = "DURATION", default_value = "12h", value_parser = parse_duration, env = "XAGENT_ADB_WALL_SESSION_TTL")]
    pub wall_session_ttl: Duration,

    /// Without an API key, a host name browsers may use to reach the wall (repeatable). IP addresses and
    /// localhost always work; any other name is refused with 403 (DNS rebinding). Unused when a key is set.
    #[arg(long = "allowed-host", value_name = "NAME", env = "XAGENT_ADB_ALLOWED_HOSTS", value_delimiter = ',')]
    pub allowed_hosts: Vec<String>,

    /// Serve without an API key on a non-loopback --listen address: anyone who reaches the port drives the
    /// phones. Without this flag such a configuration is refused (exit 3).
    #[arg(long, env = "XAGENT_ADB_ALLOW_NO_API_KEY_ON_NETWORK")]
    pub allow_no_api_key_on_network: bool,

    /// Mark the wall's session cookie `Secure` (browsers then send it over HTTPS only): for a wall reached through
    /// a TLS-terminating proxy.
    #[arg(long, env = "XAGENT_ADB_WALL_SECURE_COOKIE")]
    pub wall_secure_cookie: bool,

    /// How long a device-wall thumbnail is reused before the phone is captured again (at least 2s).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_duration, env = "XAGENT_ADB_WALL_THUMBNAIL_INTERVAL")]
    pub wall_thumbnail_interval: Duration,

    /// Screen captures compressed on the phone (`screencap | gzip -1`, lossless) where its gzip works (Android 8+,
    /// probed once per phone), the uncompressed framebuffer otherwise. `off`: always the framebuffer (a vendor
    /// build whose gzip misbehaves; on a fast local link the phone's CPU may cost more than the bytes).
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto", env = "XAGENT_ADB_CAPTURE_COMPRESSION")]
    pub capture_compression: AutoOff,

    /// Most parallel streams one compressed capture uses on a phone with several CPUs (each deflates one part
    /// of the frame on its own core; 1 to 4). 1: one `screencap | gzip -1` stream, no temp file on the phone.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u8).range(1..=4), env = "XAGENT_ADB_CAPTURE_STREAMS")]
    pub capture_streams: u8,

    /// The resident phone helper (Android 8+): a small dex pushed to /data/local/tmp and run with `app_process` as
    /// the shell user for as long as the phone is connected, spoken to over its own adb stream — taps, keys and
    /// text in milliseconds, any script typed through the clipboard, the UI tree without uiautomator's idle wait.
    /// Each operation falls back to the shell path on its own. `off`: always the shell path.
    #[arg(long, value_enum, value_name = "MODE", default_value = "auto", env = "XAGENT_ADB_PHONE_HELPER")]
    pub phone_helper: AutoOff,

    /// Webhook told (JSON POST, 3 attempts) when an agent asks for a person (android_request_human), e.g. a chat
    /// relay: `http://relay.lan:8080/hooks/<token>`. http:// only; the API key is never sent, and only the URL's
    /// host and port are logged.
    #[arg(long, value_name = "URL", env = "XAGENT_ADB_NOTIFY_URL")]
    pub notify_url: Option<String>,

    /// An operator's takeover of a phone (device wall) ends after this long without input; the agent may act
    /// again then. Between 10s and 1h.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration, env = "XAGENT_ADB_WALL_TAKEOVER_IDLE")]
    pub wall_takeover_idle: Duration,

    /// A device-wall live view whose client has accepted no data for this long is closed and its viewer place
    /// freed (a client that stopped reading). Between 1s and 10m.
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = parse_duration, env = "XAGENT_ADB_WALL_LIVE_WRITE_TIMEOUT")]
    pub wall_live_write_timeout: Duration,

    /// A header in which a reverse proxy names the signed-in operator (single sign-on), e.g. X-Forwarded-User.
    /// Believed only on requests from a --trusted-proxy address; the name's role comes from the users file
    /// (`users add`), viewer for a name without an account.
    #[arg(long, value_name = "HEADER", env = "XAGENT_ADB_TRUSTED_USER_HEADER", requires = "trusted_proxies")]
    pub trusted_user_header: Option<String>,

    /// Address or network (ADDR/BITS) of the reverse proxy whose --trusted-user-header is believed; repeatable.
    #[arg(long = "trusted-proxy", value_name = "CIDR", env = "XAGENT_ADB_TRUSTED_PROXY", value_delimiter = ',', value_parser = crate::wall::Cidr::parse, requires = "trusted_user_header")]
    pub trusted_proxies: Vec<crate::wall::Cidr>,

    /// Audit records kept in the state database. Past it the oldest records younger than --audit-retention move
    /// to the compressed archive in the data dir (never deleted); if it is full, agents' side effects are counted,
    /// not stored one by one, and /health says so.
    #[arg(long, value_name = "N", default_value_t = crate::audit::MAX_RECORDS, value_parser = clap::value_parser!(u64).range(100..), env = "XAGENT_ADB_AUDIT_MAX_RECORDS")]
    pub audit_max_records: u64,

    /// Audit records (database and archive) older than this are pruned; younger ones are never removed by the
    /// record cap. `audit verify` fails when younger ones are missing.
    #[arg(long, value_name = "DURATION", default_value = "90d", value_parser = parse_duration, env = "XAGENT_ADB_AUDIT_RETENTION")]
    pub audit_retention: Duration,

    /// Individual audit records one channel may write per day; past it its side effects are counted per tool
    /// (repeats of the same action are always counted, not stored one by one).
    #[arg(long, value_name = "N", default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(1..), env = "XAGENT_ADB_AUDIT_CHANNEL_BUDGET")]
    pub audit_channel_budget: u64,

    /// Largest size of the audit archive (`audit-archive.xaa` in the data dir).
    #[arg(long, value_name = "SIZE", default_value = "64MiB", value_parser = parse_size, env = "XAGENT_ADB_AUDIT_ARCHIVE_MAX_BYTES")]
    pub audit_archive_max_bytes: u64,
}

/// `--capture-compression`, `--phone-helper`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, ValueEnum)]
pub enum AutoOff {
    Auto,
    Off,
}

/// Turns `serve` flags into a checked configuration (key, adb servers, policy, allowlist).
pub fn resolve_serve(args: &ServeArgs) -> Result<Resolved, ConfigError> {
    let api_key = resolve_api_key(args.key.api_key_file.as_deref())?;
    check_exposure(args.listen, api_key.is_some(), args.allow_no_api_key_on_network)?;
    let adb_servers = resolve_adb_servers(&args.adb.adb_servers)?;
    let mut policy = load_policy(args.policy.as_deref())?;
    policy.tool_deadline_max = args.tool_deadline_max;
    if !policy.allow_serials.is_empty() && !args.allow_serials.is_empty() {
        return Err(ConfigError {
            code: exit::CONFIG,
            message: "serials are allowed both by --allow-serial and by the policy file; keep the list in one place"
                .into(),
        });
    }
    let allow_serials =
        if args.allow_serials.is_empty() { policy.allow_serials.clone() } else { args.allow_serials.clone() };
    let command = match args.recover_command.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        Some(c) => Some(
            crate::device::recovery_config::split_command(c)
                .map_err(|e| ConfigError { code: exit::CONFIG, message: format!("--recover-command: {e}") })?,
        ),
        None => None,
    };
    if !(crate::device::recovery_config::OFFLINE_AFTER_MIN..=crate::device::recovery_config::OFFLINE_AFTER_MAX)
        .contains(&args.recover_offline_after)
    {
        return Err(ConfigError {
            code: exit::CONFIG,
            message: format!(
                "--recover-offline-after must be between 2s and 1h, not {} s",
                args.recover_offline_after.as_secs_f64()
            ),
        });
    }
    let notify_url = match args.notify_url.as_deref().map(str::trim).filter(|u| !u.is_empty()) {
        Some(u) => {
            Some(crate::notify::NotifyUrl::parse(u).map_err(|message| ConfigError { code: exit::CONFIG, message })?)
        }
        None => None,
    };
    let recovery = crate::device::recovery_config::Config {
        command,
        command_timeout: args.recover_command_timeout,
        wait: args.recover_wait,
        offline_after: args.recover_offline_after,
        ..Default::default()
    };
    Ok(Resolved {
        recovery,
        notify_url,
        capture_compression: args.capture_compression == AutoOff::Auto,
        capture_streams: usize::from(args.capture_streams),
        phone_helper: args.phone_helper == AutoOff::Auto,
        serve: crate::config::ServeConfig {
            listen: args.listen,
            data_dir: Some(args.data_dir.clone()),
            api_key,
            allow_serials,
            labels: policy.labels.clone(),
            lease_grace: args.lease_grace,
            max_message_bytes: args.max_message_bytes,
            drain_timeout: args.drain_timeout,
            limits: crate::server::Limits {
                max_sessions: args.max_sessions as usize,
                max_mcp_sessions: args.max_mcp_sessions as usize,
                mcp_unbound_idle: args.mcp_unbound_idle,
                max_channels: args.max_channels as usize,
                max_connections_per_ip: args.max_connections_per_ip as usize,
                header_timeout: args.header_timeout,
                body_timeout: args.body_timeout,
                hello_timeout: args.hello_timeout,
                ws_write_timeout: args.ws_write_timeout,
            },
            allowed_hosts: args.allowed_hosts.clone(),
            audit: crate::audit::Settings {
                max_records: args.audit_max_records,
                retention: args.audit_retention,
                channel_budget: args.audit_channel_budget,
                archive_max_bytes: args.audit_archive_max_bytes,
                archive: None,
            },
        },
        transfer: crate::config::TransferConfig {
            cache: crate::files::Limits {
                ttl: args.file_ttl,
                max_bytes: args.cache_max_bytes,
                max_files: args.cache_max_files,
            },
            upload_max_bytes: args.upload_max_bytes,
            cache_dir: args.cache_dir.clone(),
        },
        adb_servers,
        policy,
        key_file: args.key.api_key_file.clone(),
        wall: crate::wall::WallConfig {
            session_ttl: args.wall_session_ttl,
            thumbnail_interval: args.wall_thumbnail_interval,
            data_dir: None,
            secure_cookie: args.wall_secure_cookie,
            takeover_idle: args.wall_takeover_idle.clamp(Duration::from_secs(10), Duration::from_secs(3600)),
            live_write_timeout: args.wall_live_write_timeout.clamp(Duration::from_secs(1), Duration::from_secs(600)),
            trusted_user_header: match args.trusted_user_header.as_deref().map(str::trim) {
                Some(h) => Some(
                    hyper::header::HeaderName::from_bytes(h.as_bytes())
                        .map_err(|_| ConfigError {
                            code: exit::CONFIG,
                            message: format!("--trusted-user-header {h:?} is not a header name"),
                        })?
                        .as_str()
                        .to_owned(),
                ),
                None => None,
            },
            trusted_proxies: args.trusted_proxies.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_parses() {
        Cli::command_for_test();
        let cli =
            Cli::try_parse_from(["x", "serve", "--adb-server", "a:1", "--adb-server", "b:2", "--lease-grace", "2s"])
                .unwrap();
        let Command::Serve(s) = cli.command else { panic!() };
        assert_eq!(s.adb.adb_servers, vec!["a:1", "b:2"]);
        assert_eq!(s.lease_grace, Duration::from_secs(2));
        assert_eq!((s.file_ttl, s.cache_max_bytes, s.cache_max_files), (Duration::from_secs(600), 512 << 20, 2000));
        assert_eq!(s.upload_max_bytes, 256 << 20);
        let cli = Cli::try_parse_from(["x", "serve", "--file-ttl", "1s", "--cache-max-files", "2"]).unwrap();
        let Command::Serve(s) = cli.command else { panic!() };
        assert_eq!((s.file_ttl, s.cache_max_files), (Duration::from_secs(1), 2));
        assert!(Cli::try_parse_from(["x", "serve", "--cache-max-files", "0"]).is_err());
        assert!(Cli::try_parse_from(["x", "serve", "--api-key", "k"]).is_err(), "the key is never a flag value");
        let Command::Serve(s) = Cli::try_parse_from(["x", "serve"]).unwrap().command else { panic!() };
        assert_eq!((s.max_sessions, s.max_channels, s.max_connections_per_ip), (64, 1000, 128));
        assert_eq!(
            (s.header_timeout, s.hello_timeout, s.ws_write_timeout),
            (Duration::from_secs(5), Duration::from_secs(10), Duration::from_secs(10))
        );
        assert!(Cli::try_parse_from(["x", "serve", "--max-sessions", "0"]).is_err());
        let cli = Cli::try_parse_from(["x", "serve", "--listen", "localhost:8790"]).unwrap();
        let Command::Serve(s) = cli.command else { panic!() };
        assert!(s.listen.ip().is_loopback() && s.listen.port() == 8790, "{}", s.listen);
        let e = Cli::try_parse_from(["x", "serve", "--listen", "8790"]).unwrap_err().to_string();
        assert!(e.contains("0.0.0.0:8790"), "{e}");
    }

    #[test]
    fn no_key_on_a_network_address_needs_the_explicit_flag() {
        let serve = |args: &[&str]| {
            let mut v = vec!["x", "serve", "--data-dir", "/nonexistent"];
            v.extend_from_slice(args);
            let Command::Serve(s) = Cli::try_parse_from(v).unwrap().command else { panic!() };
            resolve_serve(&s)
        };
        let e = serve(&["--listen", "0.0.0.0:8790"]).err().expect("refused");
        assert_eq!(e.code, exit::CONFIG);
        assert!(e.message.contains("--allow-no-api-key-on-network"), "{}", e.message);
        assert!(serve(&["--listen", "0.0.0.0:8790", "--allow-no-api-key-on-network"]).is_ok());
        assert!(serve(&["--listen", "127.0.0.2:8790"]).is_ok(), "loopback needs no key");
        assert!(serve(&["--listen", "[::1]:8790"]).is_ok());
    }

    /// Every flag of `serve` (and so of `doctor`) sits in a headed group of `--help`: a new flag must be given
    /// one in `SERVE_HEADINGS`.
    #[test]
    fn every_serve_flag_has_a_heading() {
        let cmd = super::command();
        for name in ["serve", "doctor"] {
            let sub = cmd.find_subcommand(name).unwrap();
            for a in sub.get_arguments() {
                let id = a.get_id().as_str();
                if ["help", "version", "log_format"].contains(&id) {
                    continue;
                }
                assert!(a.get_help_heading().is_some(), "{name} --{id} has no heading in SERVE_HEADINGS");
            }
        }
    }

    /// Issue 37 item 3: every flag and argument of every command says what it is (an undescribed flag is a
    /// blank in `--help`, `docs/commands.md` and `docs/configuration.md`).
    #[test]
    fn every_flag_of_every_command_is_described() {
        let cmd = super::command();
        let mut undescribed = Vec::new();
        let mut seen = 0;
        for sub in cmd.get_subcommands() {
            for nested in std::iter::once(sub).chain(sub.get_subcommands()) {
                for a in nested.get_arguments() {
                    seen += 1;
                    let described = a.get_help().or(a.get_long_help()).is_some_and(|h| h.to_string().trim().len() > 3);
                    if !described {
                        undescribed.push(format!("{} {}", nested.get_name(), a.get_id()));
                    }
                }
            }
        }
        assert!(seen > 50, "the walk saw the commands' flags ({seen})");
        assert!(undescribed.is_empty(), "flags without a description: {undescribed:?}");
    }

    #[test]
    fn sizes_in_help_are_human() {
        assert_eq!(crate::config::parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(crate::config::parse_size("64K"), Ok(64 << 10));
        assert_eq!(crate::config::parse_size("1048576"), Ok(1 << 20));
        assert!(crate::config::parse_size("1.5MiB").is_err() && crate::config::parse_size("9Zb").is_err());
        assert!(crate::config::parse_size("99999999999GiB").is_err(), "overflow is an error, not a wrap");
        let help = super::command().find_subcommand_mut("serve").unwrap().render_long_help().to_string();
        assert!(help.contains("[default: 512MiB]") && !help.contains("536870912"), "{help}");
        for heading in ["Network and access:", "Phones:", "Device wall and operators:", "Examples:"] {
            assert!(help.contains(heading), "{heading} missing in serve --help");
        }
        let doctor = super::command().find_subcommand_mut("doctor").unwrap().render_long_help().to_string();
        assert!(
            doctor.contains("It only reads") && doctor.contains("sudo") && doctor.contains("What it checks"),
            "{doctor}"
        );
    }

    impl Cli {
        fn command_for_test() {
            <Cli as clap::CommandFactory>::command().debug_assert();
            super::command().debug_assert();
        }
    }
}
