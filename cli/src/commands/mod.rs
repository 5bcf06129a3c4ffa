//! One module per subcommand.

mod ablate;
mod advance;
mod ask;
pub(crate) mod bench;
pub(crate) mod bench_cast;
pub(crate) mod bench_cluster;
mod bench_embed;
mod bench_ingest;
mod bench_retrieval;
pub(crate) mod bench_story;
mod certs;
mod eval;
mod eval_ingest;
mod import;
mod ingest;
mod llm;
mod play;
mod run;
mod scenarios;
mod serve;
mod watch;
mod worlds;

use crate::args::{BenchCommand, Cli, Command, EvalCommand, ImportCommand};

pub use ablate::AblateArgs;
pub use advance::AdvanceArgs;
pub use ask::AskArgs;
pub use bench::BenchArgs;
pub use bench_embed::EmbedBenchArgs;
pub use bench_ingest::IngestBenchArgs;
pub use certs::CertsArgs;
pub use eval::{KbfArgs, ProbesArgs};
pub use eval_ingest::IngestEvalArgs;
pub use import::BookWorldArgs;
pub use ingest::IngestArgs;
pub use llm::LlmServeArgs;
pub use play::PlayArgs;
pub use run::RunArgs;
pub use scenarios::ScenariosArgs;
pub use serve::{AgentArgs, ServeArgs};
pub use watch::WatchArgs;
pub use worlds::{CreateArgs, DeleteArgs};

pub async fn dispatch(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Run(args) => run::run(args).await,
        Command::Sandbox(args) => run::sandbox(args).await,
        Command::Serve(args) => serve::serve(*args).await,
        Command::Agent(args) => serve::agent(args).await,
        Command::Llm(args) => llm::llm(args).await,
        Command::Certs(args) => certs::certs(&args),
        Command::Watch(args) => watch::watch(args).await,
        Command::Ask(args) => ask::ask(args).await,
        Command::Play(args) => play::play(args).await,
        Command::Create(args) => worlds::create(args).await,
        Command::Worlds(args) => worlds::worlds(args).await,
        Command::Delete(args) => worlds::delete(args).await,
        Command::Advance(args) => advance::advance(args).await,
        Command::Scenarios(args) => scenarios::scenarios(&args),
        Command::Import(ImportCommand::Bookworld(args)) => import::bookworld(&args),
        Command::Ingest(args) => ingest::ingest(&args).await,
        Command::Eval(EvalCommand::Probes(args)) => eval::probes(&args).await,
        Command::Eval(EvalCommand::Kbf(args)) => eval::kbf(&args).await,
        Command::Eval(EvalCommand::Ablate(args)) => ablate::ablate(&args).await,
        Command::Eval(EvalCommand::Ingest(args)) => eval_ingest::eval_ingest(&args),
        Command::Bench(BenchCommand::Turns(args)) => bench::bench(args).await,
        Command::Bench(BenchCommand::Embed(args)) => bench_embed::bench_embed(&args).await,
        Command::Bench(BenchCommand::Ingest(args)) => bench_ingest::bench_ingest(&args).await,
        Command::Bench(BenchCommand::Retrieval(output)) => {
            bench_retrieval::bench_retrieval(&output)
        }
        Command::Bench(BenchCommand::Story(args)) => bench_story::bench_story(&args).await,
        Command::Bench(BenchCommand::Cast(args)) => bench_cast::bench_cast(*args).await,
        Command::Bench(BenchCommand::Cluster(args)) => bench_cluster::bench_cluster(&args).await,
    }
}
