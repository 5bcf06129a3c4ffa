use anyhow::Context as _;
use clap::Args;
use dramatis_llm_local::{EngineConfig, LocalEngine, LocalServerConfig, serve};
use dramatis_runtime::Shutdown;
use dramatis_runtime::models::{DEFAULT_LLM_FILE, missing_message, model_path};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct LlmServeArgs {
    /// Address to listen on; port 0 picks a free one (printed on stdout).
    #[arg(long, env = "DRAMATIS_LLM_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// GGUF model file (default: the SmolLM2-135M-Instruct file fetched by set-up).
    #[arg(long, env = "DRAMATIS_LLM_FILE")]
    pub model_file: Option<PathBuf>,
    /// Context window in tokens.
    #[arg(long, default_value_t = 2048)]
    pub context: u32,
    /// CPU threads for decoding (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    #[command(flatten)]
    pub metrics: crate::options::MetricsArgs,
}

pub async fn llm(args: LlmServeArgs) -> anyhow::Result<()> {
    let model_file = args
        .model_file
        .unwrap_or_else(|| model_path(DEFAULT_LLM_FILE));
    if !model_file.is_file() {
        anyhow::bail!("{}", missing_message(&model_file));
    }
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(2, |n| i32::try_from(n.get()).unwrap_or(2))
    });
    let config = EngineConfig {
        model_path: model_file.clone(),
        context: args.context,
        threads,
    };
    let engine = tokio::task::spawn_blocking(move || LocalEngine::start(config))
        .await
        .context("model loader panicked")??;
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, model = %model_file.display(), "built-in model ready");
    crate::spawn::announce(addr);
    let shutdown = Shutdown::new();
    shutdown.trigger_on_signals();
    args.metrics.start(&shutdown).await?;
    let name = model_file
        .file_stem()
        .map_or_else(|| "local".to_owned(), |s| s.to_string_lossy().into_owned());
    serve(
        listener,
        engine,
        LocalServerConfig { model_name: name },
        shutdown.wait(),
    )
    .await?;
    Ok(())
}
