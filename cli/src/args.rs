//! Command-line arguments. Every option with an environment variable can also be set
//! as `DRAMATIS_*` in the environment; flags win over the environment.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// Dramatis: a multi-agent story simulator. A world service schedules turns among
/// character agents; each agent holds only what its character perceived.
#[derive(Debug, Parser)]
#[command(name = "dramatis", version, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// More log output on stderr (repeat for more).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl Cli {
    pub fn log_filter(&self) -> &'static str {
        match (self.verbose, &self.command) {
            (
                0,
                Command::Run(_)
                | Command::Sandbox(_)
                | Command::Watch(_)
                | Command::Ask(_)
                | Command::Create(_)
                | Command::Worlds(_)
                | Command::Advance(_)
                | Command::Scenarios(_)
                | Command::Eval(_)
                | Command::Bench(_),
            ) => "warn",
            (0, _) => "info",
            (1, _) => "info,dramatis_world=debug,dramatis_character=debug",
            _ => "debug",
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Play a scenario from start to end and print the transcript live.
    ///
    /// Starts the built-in language model when no endpoint is configured, the world
    /// service, and one agent process per character.
    Run(RunArgs),
    /// Run an open story (a sandbox) from a spec file — a scenario with an [open] section
    /// and no script — or a shipped sandbox's name, and print it live.
    ///
    /// A narrator proposes events from the premise; characters pursue their own goals and
    /// travel between places; each round is a scene where people are.
    Sandbox(RunArgs),
    /// Run the world service (gRPC, with health and reflection).
    Serve(ServeArgs),
    /// Run a character agent service.
    Agent(AgentArgs),
    /// Serve the built-in language model on an OpenAI-compatible HTTP endpoint.
    Llm(LlmServeArgs),
    /// Stream a world's transcript from a running world service.
    Watch(WatchArgs),
    /// Interview a character of a world on a running world service.
    Ask(AskArgs),
    /// Play a character of a world on a running world service, in the terminal.
    ///
    /// You see only what your character perceives. On its turns, type a line: plain
    /// text is speech, `@id text` speaks to someone, `/do text` is an action, `/go
    /// place` leaves for a place. Without a line in time, the character's agent acts.
    Play(PlayArgs),
    /// Create a world on a running world service and print its id.
    ///
    /// SCENARIO is a shipped scenario's name or a scenario file; a sandbox spec file (a
    /// scenario with an [open] section) is sent inline. Then `dramatis play`, `watch`
    /// or the web viewer run it.
    Create(CreateArgs),
    /// List the worlds of a running world service.
    Worlds(ServerArg),
    /// Run a world on a running world service: some turns, to the end of the current
    /// scene (the default), or to the end of the story.
    ///
    /// Prints one line per scene as it ends: its place, lines per speaker, LLM calls,
    /// tokens, time and how it ended. `dramatis watch` shows the words themselves.
    Advance(AdvanceArgs),
    /// List the shipped scenarios, or validate scenario files.
    Scenarios(ScenariosArgs),
    /// Evaluate characters (knowledge-boundary fidelity).
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Print performance figures (orchestration per turn, embedder throughput).
    #[command(subcommand)]
    Bench(BenchCommand),
}

impl Command {
    pub fn service_name(&self) -> &'static str {
        match self {
            Self::Serve(_) => "dramatis-world",
            Self::Agent(_) => "dramatis-agent",
            Self::Llm(_) => "dramatis-llm",
            _ => "dramatis",
        }
    }
}

/// Who writes scene memories (see `--memory-writes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MemoryWritesArg {
    Auto,
    Digest,
    Model,
}

/// Which language model characters use.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    /// OpenAI-compatible endpoint base URL, e.g. http://127.0.0.1:8080/v1. When absent,
    /// the built-in model is started.
    #[arg(long, env = "DRAMATIS_LLM_ENDPOINT")]
    pub llm_endpoint: Option<String>,
    /// Model name sent to the endpoint.
    #[arg(
        long,
        env = "DRAMATIS_LLM_MODEL",
        default_value = "smollm2-135m-instruct"
    )]
    pub llm_model: String,
    /// Bearer token for the endpoint.
    #[arg(long, env = "DRAMATIS_LLM_API_KEY", hide_env_values = true)]
    pub llm_api_key: Option<String>,
    /// Seconds to wait for a response or for the next streamed piece.
    #[arg(long, env = "DRAMATIS_LLM_TIMEOUT", default_value_t = 120)]
    pub llm_timeout: u64,
    /// Use the scripted model (no language model at all) answering from this JSON
    /// fixture; `builtin` for its generic lines.
    #[arg(long, env = "DRAMATIS_SCRIPTED", conflicts_with = "llm_endpoint")]
    pub scripted: Option<String>,
    /// Sentence-embedding model directory (model.onnx + tokenizer.json) each agent
    /// embeds its memory with (default: all-MiniLM-L6-v2 int8 fetched by set-up).
    #[arg(long, env = "DRAMATIS_EMBEDDER_DIR")]
    pub embedder_dir: Option<PathBuf>,
    /// Who writes a character's memory of each scene: `digest` (a first-person digest of
    /// what it perceived, no model call), `model` (the character model, one call per scene
    /// per character), or `auto` (model for an --llm-endpoint you give, digest for the
    /// built-in or scripted model).
    #[arg(long, env = "DRAMATIS_MEMORY_WRITES", value_enum, default_value_t = MemoryWritesArg::Auto)]
    pub memory_writes: MemoryWritesArg,
    /// Memory modules every character runs, comma-separated, overriding the scenario's
    /// [memory] section: `reverie` (ReverieMem's layers), `dualmem` (fact and insight
    /// streams), `moom` (plot summaries, persona keys, forgetting), `bookmarks`
    /// (bookmark pool), or `all` / `none`. Module steps call the model only with
    /// --memory-writes model; otherwise they use their deterministic fallbacks.
    #[arg(long, env = "DRAMATIS_MEMORY_MODULES", value_parser = parse_modules)]
    pub memory_modules: Option<dramatis_memory::modules::ModuleSet>,
    /// Endpoint for the narrator role (default: the character endpoint).
    #[arg(long, env = "DRAMATIS_NARRATOR_ENDPOINT")]
    pub narrator_endpoint: Option<String>,
    /// Model for the narrator role (default: --llm-model).
    #[arg(long, env = "DRAMATIS_NARRATOR_MODEL")]
    pub narrator_model: Option<String>,
    /// Endpoint for the judge role (default: the character endpoint).
    #[arg(long, env = "DRAMATIS_JUDGE_ENDPOINT")]
    pub judge_endpoint: Option<String>,
    /// Model for the judge role (default: --llm-model).
    #[arg(long, env = "DRAMATIS_JUDGE_MODEL")]
    pub judge_model: Option<String>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A shipped scenario name (see `dramatis scenarios`) or a scenario file path.
    pub scenario: String,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Host every character in one agent process instead of one process each.
    #[arg(long)]
    pub shared_agent: bool,
    /// Where the event log and process logs go (default: a temporary directory).
    #[arg(long, env = "DRAMATIS_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
    /// Write every prompt each character's agent sent to its language model, with the
    /// memory items (and layers) it contained, to DIR/<character>.jsonl.
    #[arg(long)]
    pub audit_dir: Option<PathBuf>,
    /// Plain output without colours.
    #[arg(long, env = "NO_COLOR", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_color: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "DRAMATIS_LISTEN", default_value = "127.0.0.1:7070")]
    pub listen: SocketAddr,
    /// Agent service endpoints (http://host:port) to place characters on, in turn.
    /// When none is given, agent processes are started as worlds need them.
    #[arg(
        long = "agent-endpoint",
        env = "DRAMATIS_AGENT_ENDPOINTS",
        value_delimiter = ','
    )]
    pub agent_endpoints: Vec<String>,
    /// When starting agents: one process per world instead of one per character.
    #[arg(long)]
    pub shared_agent: bool,
    #[command(flatten)]
    pub model: ModelArgs,
    /// Where the event log (and process logs) live.
    #[arg(long, env = "DRAMATIS_DATA_DIR", default_value = "dramatis-data")]
    pub data_dir: PathBuf,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
    /// The web viewer's files (the repository's web/ directory, set up by
    /// scripts/setup.sh); the page is served at http://<listen>/viewer/.
    #[arg(long, env = "DRAMATIS_VIEWER_DIR")]
    pub viewer_dir: Option<PathBuf>,
    /// Serve no web viewer (gRPC and gRPC-Web only).
    #[arg(long, conflicts_with = "viewer_dir")]
    pub no_viewer: bool,
}

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// Address to listen on; port 0 picks a free one (printed on stdout).
    #[arg(long, env = "DRAMATIS_AGENT_LISTEN", default_value = "127.0.0.1:7071")]
    pub listen: SocketAddr,
    /// Where character shards are saved (one JSON file per character per world) and read
    /// back when a character is attached again after a restart.
    #[arg(
        long,
        env = "DRAMATIS_AGENT_DATA_DIR",
        default_value = "dramatis-data/shards"
    )]
    pub data_dir: PathBuf,
    #[command(flatten)]
    pub model: ModelArgs,
}

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
}

#[derive(Debug, Args)]
pub struct ServerArg {
    /// World service address.
    #[arg(long, env = "DRAMATIS_SERVER", default_value = "http://127.0.0.1:7070")]
    pub server: String,
}

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// World id.
    pub world: String,
    /// First sequence number to show.
    #[arg(long, default_value_t = 1)]
    pub from: u64,
    /// Print what is logged so far and exit instead of following.
    #[arg(long)]
    pub no_follow: bool,
    /// Only what this character perceived (id, name or alias), as its agent received it.
    #[arg(long)]
    pub pov: Option<String>,
    #[command(flatten)]
    pub server: ServerArg,
    #[arg(long, env = "NO_COLOR", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_color: bool,
}

#[derive(Debug, Args)]
pub struct PlayArgs {
    /// World id.
    pub world: String,
    /// Character id, name or alias.
    pub character: String,
    /// Seconds the world waits for your line before the agent acts.
    #[arg(long, default_value_t = 120)]
    pub timeout: u32,
    /// Do not advance the world (someone else drives it).
    #[arg(long)]
    pub no_advance: bool,
    #[command(flatten)]
    pub server: ServerArg,
    #[arg(long, env = "NO_COLOR", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_color: bool,
}

#[derive(Debug, Args)]
pub struct AskArgs {
    /// World id.
    pub world: String,
    /// Character id, name or alias.
    pub character: String,
    /// The question.
    pub question: String,
    /// Show what the question brings to the character's mind (each item with its memory
    /// module and layer) instead of an answer; no answer call is made.
    #[arg(long)]
    pub recall: bool,
    #[command(flatten)]
    pub server: ServerArg,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("until").args(["turns", "scene", "to_end"])))]
pub struct AdvanceArgs {
    /// World id.
    pub world: String,
    /// Run this many turns (scene markers and narration are not turns).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub turns: Option<u32>,
    /// Run to the end of the current scene (the default).
    #[arg(long)]
    pub scene: bool,
    /// Run to the end of the story.
    #[arg(long)]
    pub to_end: bool,
    #[command(flatten)]
    pub server: ServerArg,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Shipped scenario name, scenario file, or sandbox spec file.
    pub scenario: String,
    /// Id for the new world (default: generated).
    #[arg(long)]
    pub id: Option<String>,
    #[command(flatten)]
    pub server: ServerArg,
}

#[derive(Debug, Args)]
pub struct ScenariosArgs {
    /// Scenario files to validate (default: list the shipped scenarios).
    pub files: Vec<PathBuf>,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// Knowledge Boundary Fidelity (ReverieMem): multiple-choice probes to characters,
    /// KRf items (the character can know the answer) and KR items (it cannot: the right
    /// answer is E, "I cannot answer this from my own knowledge").
    Kbf(KbfArgs),
    /// Memory modules switched on and off (ReverieMem, DualMem, MOOM, BOOKMARKS): for
    /// each set, the scenario is played, its KBF probes answered from what the
    /// characters recall (no answer call), and a long generated run probes facts planted
    /// hundreds of lines earlier. One table: KBF, KRf, KR, LLM calls and prompt tokens
    /// per turn, memory items kept, probe QA and Recall@10.
    Ablate(AblateArgs),
}

#[derive(Debug, Args)]
pub struct AblateArgs {
    /// Scenario file or shipped scenario name.
    pub scenario: String,
    /// KBF probe file (JSONL) for the scenario.
    pub probes: PathBuf,
    /// Module sets to compare, separated by `;` (each a comma list as --memory-modules).
    #[arg(
        long,
        default_value = "none;reverie;dualmem;moom;bookmarks;reverie,dualmem;reverie,moom;reverie,bookmarks;all"
    )]
    pub sets: String,
    /// Lines of the long generated run (0: skip it).
    #[arg(long, default_value_t = 600)]
    pub rounds: u32,
    /// Support (cosine) an option needs from what was recalled.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f32,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Run on the built-in model instead of the scripted one (slow: minutes per set).
    #[arg(long)]
    pub builtin_model: bool,
    /// The language model (default: the scripted model, so every module step takes its
    /// deterministic fallback unless --memory-writes model).
    #[command(flatten)]
    pub model: ModelArgs,
}

/// Who answers the probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Answerer {
    /// The full character agent, asked through `World.Ask` (its shard, its model).
    Agent,
    /// Retrieval over the character's own visible facts; no language model.
    Retrieval,
    /// Baseline: retrieval over the character's profile only.
    Direct,
    /// Baseline: one index over every character's facts (the leak).
    NaiveRag,
}

#[derive(Debug, Args)]
pub struct KbfArgs {
    /// Probe file (JSONL; see scenarios/README.md).
    pub probes: PathBuf,
    /// Scenario the probes belong to (default: scenario.toml beside the probe file).
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Answerer::Retrieval)]
    pub answerer: Answerer,
    /// Support (cosine) an option needs before a retrieval answerer commits to it.
    #[arg(long, default_value_t = 0.5)]
    pub threshold: f32,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    pub json: bool,
    /// The language model of the agent answerer (the built-in one when none is given).
    #[command(flatten)]
    pub model: ModelArgs,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Orchestration overhead per turn: world and agent services over loopback gRPC with
    /// the scripted model, so everything but the language model is measured.
    Turns(BenchArgs),
    /// Embedder throughput (sentences/s) at batch 1 and 32, beside Python onnxruntime on
    /// the same model and sentences when `.cache/venv` has it.
    Embed(EmbedBenchArgs),
    /// Semantic-layer retrieval latency (Vis-Retrieve, top 8) at 1k, 10k and 100k facts.
    Retrieval,
}

#[derive(Debug, Args)]
pub struct EmbedBenchArgs {
    /// How many sentences to embed per batch size.
    #[arg(long, default_value_t = 512)]
    pub sentences: usize,
    /// Intra-op threads.
    #[arg(long, default_value_t = 2)]
    pub threads: usize,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Scenario to play (shipped name or path).
    #[arg(default_value = "study-in-scarlet")]
    pub scenario: String,
    /// How many times to play it.
    #[arg(long, default_value_t = 5)]
    pub runs: u32,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
    /// Who writes scene memories during the benchmark (the scripted model answers
    /// instantly, so `model` measures the calls and prompt tokens a capable model costs).
    #[arg(long, value_enum, default_value_t = MemoryWritesArg::Digest)]
    pub memory_writes: MemoryWritesArg,
}

fn parse_modules(text: &str) -> Result<dramatis_memory::modules::ModuleSet, String> {
    dramatis_memory::modules::ModuleSet::parse(text)
}
