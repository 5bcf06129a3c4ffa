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
    // Services hold a descriptor per connection, store and agent pipe.
    let _ = dramatis_runtime::grpc::raise_file_limit();
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
        // The benchmarks that run the services in process time a turn's stages.
        let stages: Option<dramatis_runtime::telemetry::ExtraLayer> = matches!(
            cli.command,
            args::Command::Bench(args::BenchCommand::Turns(_) | args::BenchCommand::Story(_))
        )
        .then(|| Box::new(dramatis_eval::bench::stages::StageLayer) as _);
        let _telemetry = dramatis_runtime::telemetry::init_with(
            cli.command.service_name(),
            cli.log_filter(),
            stages,
        );
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
