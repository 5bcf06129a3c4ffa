//! `dramatis`: the command-line entry point. Parses arguments, starts telemetry and
//! hands over to the command; everything else lives in the library crates.

mod args;
mod commands;
mod locks;
mod models;
mod options;
mod printer;
mod spawn;
mod stack;

use args::{BenchCommand, Cli, Command, EvalCommand, ImportCommand};
use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
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
            Command::Bench(BenchCommand::Turns(_) | BenchCommand::Story(_))
        )
        .then(|| Box::new(dramatis_eval::bench::stages::StageLayer) as _);
        let _telemetry = dramatis_runtime::telemetry::init_with(
            cli.command.service_name(),
            cli.log_filter(),
            stages,
        );
        dispatch(cli).await
    });
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("dramatis: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Runs the command the line asked for.
async fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => commands::run::run(args).await,
        Command::Sandbox(args) => commands::run::sandbox(args).await,
        Command::Serve(args) => commands::serve::serve(*args).await,
        Command::Agent(args) => commands::serve::agent(args).await,
        Command::Llm(args) => commands::llm::llm(args).await,
        Command::Certs(args) => commands::certs::certs(&args),
        Command::Watch(args) => commands::watch::watch(args).await,
        Command::Ask(args) => commands::ask::ask(args).await,
        Command::Play(args) => commands::play::play(args).await,
        Command::Create(args) => commands::worlds::create(args).await,
        Command::Worlds(args) => commands::worlds::worlds(args).await,
        Command::Delete(args) => commands::worlds::delete(args).await,
        Command::Advance(args) => commands::advance::advance(args).await,
        Command::Intervene(args) => commands::intervene::intervene(args).await,
        Command::Fork(args) => commands::worlds::fork(args).await,
        Command::Regenerate(args) => commands::worlds::regenerate(args).await,
        Command::Scenarios(args) => commands::scenarios::scenarios(&args),
        Command::Import(ImportCommand::Bookworld(args)) => commands::import::bookworld(&args),
        Command::Import(ImportCommand::Card(args)) => commands::import::card(&args),
        Command::Ingest(args) => commands::ingest::ingest(&args).await,
        Command::Eval(EvalCommand::Probes(args)) => commands::eval::probes(&args).await,
        Command::Eval(EvalCommand::Kbf(args)) => commands::kbf::kbf(&args).await,
        Command::Eval(EvalCommand::Ablate(args)) => commands::ablate::ablate(&args).await,
        Command::Eval(EvalCommand::Corpus(args)) => commands::corpus::corpus(&args).await,
        Command::Eval(EvalCommand::Ingest(args)) => commands::eval_ingest::eval_ingest(&args),
        Command::Eval(EvalCommand::Judge(args)) => commands::judge::judge_command(&args).await,
        Command::Eval(EvalCommand::Style(args)) => commands::style::style(&args).await,
        Command::Export(args) => commands::export::export(&args).await,
        Command::Repair(args) => commands::repair::repair(&args),
        Command::Bench(BenchCommand::Turns(args)) => commands::bench::bench(args).await,
        Command::Bench(BenchCommand::Ask(args)) => commands::bench_ask::bench_ask(&args).await,
        Command::Bench(BenchCommand::Embed(args)) => {
            commands::bench_embed::bench_embed(&args).await
        }
        Command::Bench(BenchCommand::Ingest(args)) => {
            commands::bench_ingest::bench_ingest(&args).await
        }
        Command::Bench(BenchCommand::Retrieval(output)) => {
            commands::bench_retrieval::bench_retrieval(&output)
        }
        Command::Bench(BenchCommand::Story(args)) => {
            commands::bench_story::bench_story(&args).await
        }
        Command::Bench(BenchCommand::Cast(args)) => commands::bench_cast::bench_cast(*args).await,
        Command::Bench(BenchCommand::Cluster(args)) => {
            commands::bench_cluster::bench_cluster(&args).await
        }
        Command::Bench(BenchCommand::Soak(args)) => commands::bench_soak::bench_soak(&args).await,
    }
}
