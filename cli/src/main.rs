//! `dramatis`: the command-line entry point. Parses arguments, starts telemetry and
//! hands over to the command; everything else lives in the library crates.

mod args;
mod commands;
mod models;
mod printer;
mod spawn;
mod stack;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = args::Cli::parse();
    spawn::watch_lifeline();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("dramatis: cannot start the async runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let _telemetry =
            dramatis_runtime::telemetry::init(cli.command.service_name(), cli.log_filter());
        commands::dispatch(cli).await
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("dramatis: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
