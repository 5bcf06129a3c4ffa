//! Flag groups several commands share: the model and its endpoints, the server to reach,
//! memory writes and recall, input limits, how agents are laid out, metrics. A leaf of
//! the command line: it imports no command, so every command may import it.

use std::path::PathBuf;

use clap::Args;

/// Who writes scene memories (see `--memory-writes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MemoryWritesArg {
    Auto,
    Digest,
    Model,
}

/// What the boundary guard does (see `--boundary-guard`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum BoundaryGuardArg {
    Auto,
    Off,
    Flag,
    Regenerate,
}

/// An OpenAI-compatible endpoint and how to call it.
#[derive(Debug, Clone, Args)]
pub struct EndpointArgs {
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
    /// Seconds a whole call may take, retries included (a trickle of keep-alives or
    /// of single tokens ends here).
    #[arg(long, env = "DRAMATIS_LLM_DEADLINE", default_value_t = 300)]
    pub llm_deadline: u64,
    /// Ask the endpoint not to let a character's line copy runs of words from its
    /// prompt (the lines just heard, its style excerpts), with llama.cpp's DRY sampler
    /// fields. Default: on for the built-in model, off for an endpoint (llama.cpp servers
    /// honour the fields; an endpoint that refuses unknown request fields needs it off).
    #[arg(long, env = "DRAMATIS_LLM_DRY", value_name = "BOOL", num_args = 0..=1,
          default_missing_value = "true", value_parser = clap::builder::BoolishValueParser::new())]
    pub llm_dry: Option<bool>,
}

/// Which language model characters use.
#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    #[command(flatten)]
    pub endpoint: EndpointArgs,
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
    /// What happens to a generated line (a turn or an interview answer) that uses a
    /// proper name, number or place its character has no source for: `flag` (the words
    /// noted on the prompt's audit record), `regenerate` (also asked once more with
    /// those words named as unknown; if they stay, the line becomes an in-character
    /// deflection), `off`, or `auto` (regenerate for an --llm-endpoint you give, flag
    /// for the built-in or scripted model).
    #[arg(long, env = "DRAMATIS_BOUNDARY_GUARD", value_enum, default_value_t = BoundaryGuardArg::Auto)]
    pub boundary_guard: BoundaryGuardArg,
    /// Keep a turn's line that repeats most of a line the character just heard or said
    /// (or a style excerpt its prompt showed). By default such a line is asked for
    /// once more with a note not to repeat it, and replaced by an in-character fallback
    /// if the retry repeats too; the audit notes each decision.
    #[arg(long, env = "DRAMATIS_NO_ECHO_GUARD")]
    pub no_echo_guard: bool,
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
    /// Endpoint for interview answers (`Ask`; default: the character endpoint).
    #[arg(long, env = "DRAMATIS_ANSWER_ENDPOINT")]
    pub answer_endpoint: Option<String>,
    /// Model for interview answers (default: --llm-model).
    #[arg(long, env = "DRAMATIS_ANSWER_MODEL")]
    pub answer_model: Option<String>,
    /// The scripted model, from this fixture (`builtin` for its generic lines), for
    /// interview answers only.
    #[arg(
        long,
        env = "DRAMATIS_ANSWER_SCRIPTED",
        conflicts_with = "answer_endpoint"
    )]
    pub answer_scripted: Option<String>,
    /// Sampling temperature of interview answers (0: greedy, as the evaluation asks).
    #[arg(long, env = "DRAMATIS_ANSWER_TEMPERATURE", default_value_t = 0.7)]
    pub answer_temperature: f32,
    /// ReverieMem's layers a character's read path consults, comma-separated:
    /// `episodic` (scene memories), `semantic` (visible facts and perceived lines),
    /// `personality` (emotion track, behaviour patterns), or `all`.
    #[arg(long, env = "DRAMATIS_LAYERS", default_value = "all", value_parser = parse_layers)]
    pub layers: dramatis_memory::reverie::Layers,
    /// How recall searches a character's visible facts: `vectors` (the default), `words`
    /// (BM25 over word stems) or `both`, fused by rank. On every hand-written set the
    /// words added nothing once the evidence gate weighs the options (README, KBF).
    #[arg(long, env = "DRAMATIS_RECALL_BY", value_enum, default_value_t = RecallBy::Vectors)]
    pub recall_by: RecallBy,
    /// Whether recall asks the model for Self-Probe's search phrases when what it found
    /// covers the question only in part: `on`, or `off` to search by the question alone.
    #[arg(long, env = "DRAMATIS_SELF_PROBE", default_value = "on", value_parser = parse_on_off,
          action = clap::ArgAction::Set)]
    pub self_probe: bool,
    /// Whether a character answers a question only when something it holds supports
    /// an answer (a memory on the question's subject that holds the answer's own
    /// words): `on`, or `off` for the similarity rule alone (to measure the gate).
    #[arg(long, env = "DRAMATIS_EVIDENCE_GATE", default_value = "on", value_parser = parse_on_off,
          action = clap::ArgAction::Set)]
    pub evidence_gate: bool,
    /// Whether a multiple-choice question's options are searched for in the
    /// character's own facts too: `on`, or `off` to search by the question alone.
    #[arg(long, env = "DRAMATIS_OPTION_SEARCH", default_value = "on", value_parser = parse_on_off,
          action = clap::ArgAction::Set)]
    pub option_search: bool,
    /// Whether the evidence gate counts a word in other words (WordNet's synonyms of
    /// its most frequent senses, fetched by set-up): `on`, or `off` to match words
    /// only as written (to measure what synonyms add).
    #[arg(long, env = "DRAMATIS_SYNONYMS", default_value = "on", value_parser = parse_on_off,
          action = clap::ArgAction::Set)]
    pub synonyms: bool,
    /// Audited prompts each character's store keeps, the newest (older ones are
    /// dropped as new ones are saved); 0 keeps every prompt. `serve` keeps 1000 when
    /// unset, `run` and the evaluations every prompt.
    #[arg(long, env = "DRAMATIS_AUDIT_KEEP", value_name = "N")]
    pub audit_keep: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ServerArg {
    /// World service address (https:// for one serving TLS).
    #[arg(long, env = "DRAMATIS_SERVER", default_value = "http://127.0.0.1:7070")]
    pub server: String,
    /// Bearer token for a world service that asks for one (`serve --auth-tokens`).
    /// Prefer the environment variable: a flag shows in the process list.
    #[arg(long, env = "DRAMATIS_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// A CA certificate (PEM) to trust for an https:// server, besides the system's
    /// (e.g. the ca.pem `dramatis certs` wrote).
    #[arg(long, env = "DRAMATIS_TLS_CA")]
    pub tls_ca: Option<PathBuf>,
}

impl ServerArg {
    #[must_use]
    pub fn client_options(&self) -> dramatis_runtime::client::ClientOptions {
        dramatis_runtime::client::ClientOptions {
            server: self.server.clone(),
            token: self.token.clone(),
            tls_ca: self.tls_ca.clone(),
        }
    }
}

/// How recall searches facts (`--recall-by`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RecallBy {
    Both,
    Vectors,
    Words,
}

impl RecallBy {
    /// The flag's value, as a child process takes it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Both => "both",
            Self::Vectors => "vectors",
            Self::Words => "words",
        }
    }
}

fn parse_on_off(value: &str) -> Result<bool, String> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("{other:?}: expected on or off")),
    }
}

fn parse_layers(text: &str) -> Result<dramatis_memory::reverie::Layers, String> {
    dramatis_memory::reverie::Layers::parse(text)
}

fn parse_modules(text: &str) -> Result<dramatis_memory::modules::ModuleSet, String> {
    dramatis_memory::modules::ModuleSet::parse(text)
}

/// The world service's input limits (defaults in brackets; README, "Running it for
/// others", explains each).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// Largest message a client may send, in bytes [1048576].
    #[arg(long, value_name = "BYTES")]
    pub max_message_bytes: Option<usize>,
    /// Longest interview question, in characters [2000].
    #[arg(long, value_name = "CHARS")]
    pub max_question_chars: Option<usize>,
    /// Longest line a person may play, in characters [400].
    #[arg(long, value_name = "CHARS")]
    pub max_line_chars: Option<usize>,
    /// Most rounds an open story may run [1000].
    #[arg(long, value_name = "N")]
    pub max_rounds: Option<u32>,
    /// Most turns one Advance may ask for [10000].
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Most worlds the service holds at once [1000].
    #[arg(long, value_name = "N")]
    pub max_worlds: Option<usize>,
    /// Most client connections held at once; more are closed as they come [1000].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<usize>,
    /// Most Watch streams served at once [10000].
    #[arg(long, value_name = "N")]
    pub max_watchers: Option<usize>,
    /// Most Watch streams of one world at once [1000].
    #[arg(long, value_name = "N")]
    pub max_watchers_per_world: Option<usize>,
    /// Cut off a watcher that reads nothing while its buffer is full for this many
    /// seconds (it learns so: RESOURCE_EXHAUSTED) [30].
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub watcher_stall: Option<u64>,
    /// Most people playing in one world at once [16].
    #[arg(long, value_name = "N")]
    pub max_seats: Option<usize>,
    /// Most characters an inline sandbox spec may hold [1000].
    #[arg(long, value_name = "N")]
    pub max_characters: Option<usize>,
    /// Most locations an inline sandbox spec may hold [1000].
    #[arg(long, value_name = "N")]
    pub max_locations: Option<usize>,
    /// Most paths between locations an inline sandbox spec may hold [10000].
    #[arg(long, value_name = "N")]
    pub max_paths: Option<usize>,
    /// Most facts an inline sandbox spec may hold [10000].
    #[arg(long, value_name = "N")]
    pub max_facts: Option<usize>,
    /// Longest the story waits for a person's action, in seconds [600].
    #[arg(long, value_name = "SECS")]
    pub seat_wait: Option<u64>,
    /// Detach a finished world's characters (stopping agents started for them) after
    /// this many seconds without a call to them; 0: never [300].
    #[arg(long, value_name = "SECS")]
    pub idle_detach: Option<u64>,
    /// Most others a character's turn and each line it perceives name in a crowd,
    /// chosen by what matters to it (who addressed it, whom it addressed, the last
    /// speakers, whom it knows); the rest are counted. A scenario's own `attention`
    /// wins [12].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(3..))]
    pub attention: Option<u64>,
}

impl LimitArgs {
    /// The limits, defaults filled in.
    #[must_use]
    pub fn limits(&self) -> dramatis_world::Limits {
        let mut limits = dramatis_world::Limits::default();
        let set = |to: &mut usize, from: Option<usize>| {
            if let Some(v) = from {
                *to = v;
            }
        };
        set(&mut limits.max_message_bytes, self.max_message_bytes);
        set(&mut limits.max_question_chars, self.max_question_chars);
        set(&mut limits.max_line_chars, self.max_line_chars);
        set(&mut limits.max_worlds, self.max_worlds);
        set(&mut limits.max_seats, self.max_seats);
        set(&mut limits.max_watchers, self.max_watchers);
        set(
            &mut limits.max_watchers_per_world,
            self.max_watchers_per_world,
        );
        if let Some(secs) = self.watcher_stall {
            limits.watcher_stall = std::time::Duration::from_secs(secs);
        }
        set(&mut limits.max_connections, self.max_connections);
        set(&mut limits.max_characters, self.max_characters);
        set(&mut limits.max_locations, self.max_locations);
        set(&mut limits.max_paths, self.max_paths);
        set(&mut limits.max_facts, self.max_facts);
        limits.max_rounds = self.max_rounds.unwrap_or(limits.max_rounds);
        limits.max_turns = self.max_turns.unwrap_or(limits.max_turns);
        if let Some(secs) = self.seat_wait {
            limits.seat_wait = std::time::Duration::from_secs(secs);
        }
        if let Some(n) = self.attention {
            limits.attention = usize::try_from(n).unwrap_or(usize::MAX);
        }
        if let Some(secs) = self.idle_detach {
            limits.idle_detach = (secs > 0).then(|| std::time::Duration::from_secs(secs));
        }
        limits
    }
}

/// How spawned agent processes host characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LayoutArg {
    /// A fixed pool of processes shared by every world; each character is placed on one
    /// by a hash of its world and id. Each process hosts many characters with one
    /// embedder: the layout that runs a thousand characters on one machine.
    Pool,
    /// One process per world, hosting all its characters.
    World,
    /// One process per character.
    Character,
}

/// Where `run`, `sandbox` and `serve` start agents for characters.
#[derive(Debug, Clone, Args)]
pub struct LayoutArgs {
    /// How agent processes host characters: `pool` (a few processes shared by every
    /// world, each hosting many characters), `world` (one per world) or `character`
    /// (one per character). Every layout keeps each character's memory in its own
    /// shard; see docs/hosting.md, "Hosting many characters".
    #[arg(long, env = "DRAMATIS_AGENTS", value_enum, default_value_t = LayoutArg::Pool)]
    pub agents: LayoutArg,
    /// Processes in the pool (default: one per CPU core).
    #[arg(long, env = "DRAMATIS_AGENT_POOL", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=256))]
    pub agent_pool: Option<u32>,
    /// The same as `--agents world`.
    #[arg(long, conflicts_with = "agents")]
    pub shared_agent: bool,
}

/// Where a service serves its Prometheus metrics.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Metrics")]
pub struct MetricsArgs {
    /// Serve Prometheus metrics (GET /metrics, plain HTTP/1.1) on this address, e.g.
    /// 0.0.0.0:9464 for a scraper in the cluster. They hold counts and latencies by
    /// role, never a world id or a word of a story. Off by default.
    #[arg(long, env = "DRAMATIS_METRICS_LISTEN", value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
}

impl MetricsArgs {
    /// Starts the metrics endpoint when one is asked for.
    pub async fn start(&self, shutdown: &dramatis_runtime::Shutdown) -> anyhow::Result<()> {
        if let Some(addr) = self.metrics_listen {
            dramatis_runtime::metrics::serve(addr, shutdown.clone())
                .await
                .map_err(|e| anyhow::anyhow!("cannot serve metrics on {addr}: {e}"))?;
        }
        Ok(())
    }
}
