//! `xagent-adb-connector`: parses the command line and hands over to the library. No logic of its own.

use std::process::ExitCode;

use clap::Parser;
use xagent_adb_connector::cli::{self, Cli, Command, LogFormat};
use xagent_adb_connector::device::adb::AdbBackend;
use xagent_adb_connector::run::{self, ServeConfig};
use xagent_adb_connector::tools::Registry;

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(true).init(),
    }
}

fn fail(e: cli::ConfigError) -> ExitCode {
    eprintln!("error: {}", e.message);
    ExitCode::from(e.code as u8)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    match cli.command {
        Command::Card(key) => {
            let api_key = match cli::resolve_api_key(&key) {
                Ok(k) => k,
                Err(e) => return fail(e),
            };
            let adb = AdbBackend::new(Vec::new());
            let card = xagent_adb_connector::channels::Hub::build_card(
                &Registry::device_tools(&adb),
                adb.as_ref(),
                api_key.is_some(),
            );
            println!("{}", serde_json::to_string_pretty(&card).expect("card serialises"));
            ExitCode::SUCCESS
        }
        Command::Serve(args) => {
            let api_key = match cli::resolve_api_key(&args.key) {
                Ok(k) => k,
                Err(e) => return fail(e),
            };
            let servers = match cli::resolve_adb_servers(&args.adb_servers) {
                Ok(s) => s,
                Err(e) => return fail(e),
            };
            let cfg = ServeConfig {
                listen: args.listen,
                data_dir: Some(args.data_dir),
                api_key,
                allow_serials: args.allow_serials,
                lease_grace: args.lease_grace,
                max_message_bytes: args.max_message_bytes,
                drain_timeout: args.drain_timeout,
            };
            let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
            rt.block_on(async move {
                let adb = AdbBackend::new(servers);
                let registry = Registry::device_tools(&adb);
                let running = match run::start(cfg, registry, adb).await {
                    Ok(r) => r,
                    Err(e) => return fail(e),
                };
                let trigger = running.trigger();
                tokio::spawn(async move {
                    run::signal().await;
                    tracing::info!("shutdown requested; draining");
                    let _ = trigger.send(true);
                });
                running.wait().await;
                tracing::info!("stopped");
                ExitCode::SUCCESS
            })
        }
    }
}
