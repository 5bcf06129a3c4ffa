//! The command line's shape: the subcommands, each with the arguments its command
//! declares beside its code in `commands/`; the flag groups several commands share are in
//! `options.rs`. Every option with an environment variable can also be set as `DRAMATIS_*`
//! in the environment; flags win over the environment.

use clap::{Parser, Subcommand};

use crate::options::ServerArg;

pub use crate::commands::{
    AblateArgs, AdvanceArgs, AgentArgs, AskArgs, BenchArgs, BookWorldArgs, CardArgs, CertsArgs,
    CorpusArgs, CreateArgs, DeleteArgs, EmbedBenchArgs, ExportArgs, ForkArgs, IngestArgs,
    IngestBenchArgs, IngestEvalArgs, InterveneArgs, JudgeArgs, KbfArgs, LlmServeArgs, PlayArgs,
    ProbesArgs, RegenerateArgs, RepairArgs, RunArgs, ScenariosArgs, ServeArgs, StyleArgs,
    WatchArgs,
};

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
                | Command::Delete(_)
                | Command::Advance(_)
                | Command::Intervene(_)
                | Command::Fork(_)
                | Command::Regenerate(_)
                | Command::Scenarios(_)
                | Command::Eval(_)
                | Command::Export(_)
                | Command::Import(_)
                | Command::Ingest(_)
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
    Serve(Box<ServeArgs>),
    /// Run a character agent service.
    Agent(AgentArgs),
    /// Repair a damaged event log (the service stopped): every event before the damage
    /// is kept in a new log, in order, and the damaged file is set aside beside it.
    ///
    /// Prints each world: whole again, or cut short at the sequence where its events
    /// end. The service shows a world cut short FAILED, with that sequence.
    Repair(RepairArgs),
    /// Serve the built-in language model on an OpenAI-compatible HTTP endpoint.
    Llm(LlmServeArgs),
    /// Write a deployment's certificates, for agents started elsewhere than by `serve`.
    ///
    /// A new CA, a certificate for the agents (`dramatis agent --tls DIR`) and one for
    /// the world service (`dramatis serve --agent-tls DIR`; it may also serve clients
    /// TLS with it). Agents then answer only the world service. The CA's private key
    /// is not kept.
    Certs(CertsArgs),
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
    ///
    /// One line per world: id, title, where its story is, turns taken. A world the
    /// service could not rebuild after a restart shows FAILED and why.
    Worlds(ServerArg),
    /// Delete a world from a running world service: its log and its characters'
    /// shards. It cannot be undone.
    Delete(DeleteArgs),
    /// Run a world on a running world service: some turns, to the end of the current
    /// scene (the default), or to the end of the story.
    ///
    /// Prints one line per scene as it ends: its place, lines per speaker, LLM calls,
    /// tokens, time and how it ended. `dramatis watch` shows the words themselves.
    Advance(AdvanceArgs),
    /// Branch a world: a new world whose story is the first events of another.
    ///
    /// Its characters remember exactly what they perceived up to that event and
    /// nothing after it; then the two worlds go on apart. Prints the new world's id.
    /// Needs the operator role.
    Fork(ForkArgs),
    /// Ask a world's last line again, in a new world: a fork just before that line
    /// whose next turn is played at once. The world itself is left as it was.
    ///
    /// Prints the new world's id, and its new line on stderr. Needs the operator role.
    Regenerate(RegenerateArgs),
    /// Put the director's event into a world on a running world service.
    ///
    /// A narration at a place (everyone there perceives it), a whisper to one character
    /// (only it perceives it), or a fact revealed to some characters wherever they are.
    /// It is logged like any event and marked as the director's; each character's copy
    /// names people as that character knows them. Needs the operator role.
    Intervene(InterveneArgs),
    /// List the shipped scenarios, or validate scenario files.
    Scenarios(ScenariosArgs),
    /// Turn a book into a scenario folder (ReverieMem's Source-to-Memory).
    ///
    /// The only human input is the focus characters. Five stages: scenes (places,
    /// speakers, who is present, silent or only talked about), episodic summaries (each
    /// written from the text up to its scene only), a knowledge graph (facts and who may
    /// know them, shared through organisations), personality patterns (lines clustered
    /// with the agents' embedder), and who knows whom by name. A model refines each stage
    /// when one is available; every stage also works without one (--no-model). Results
    /// are cached in the folder, so an interrupted ingest resumes.
    Ingest(IngestArgs),
    /// Turn another tool's story data into a scenario folder.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Write a world's story out to keep: a transcript, Markdown, or prose.
    ///
    /// Reads the whole log from a running world service (see `--server`). Transcript
    /// and Markdown keep every event, one line each, in log order; prose has the
    /// language model rewrite each scene as narrative.
    Export(ExportArgs),
    /// Evaluate characters and stories: knowledge-boundary fidelity, the pairwise
    /// narrative judge, voice per character.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// Print performance figures (orchestration per turn, embedder throughput, ingest).
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

#[derive(Debug, Subcommand)]
pub enum ImportCommand {
    /// A BookWorld experiment preset: its roles become characters (relations become
    /// facts visible to the two characters, role lines become style excerpts), its
    /// locations and distance map become places and paths, its script a scripted scene
    /// and its intervention an open story's premise.
    Bookworld(BookWorldArgs),
    /// SillyTavern/TavernAI character cards (PNG or JSON, V1, V2 or V3) as the cast of
    /// an open story: name, description and personality become the profile, the cards'
    /// scenarios the premise, greetings the openings, example messages style excerpts.
    /// A card's own lorebook is known to that character alone; a lorebook given with
    /// `--lorebook` to everyone, or to whom `--known-by` names, or to no one
    /// (`--secret`). Lore is triggered by its keys only into the prompts of those who
    /// hold it. Every field of a card is carried in the scenario for `export --format card`.
    Card(CardArgs),
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// KBF items generated from a scenario: its facts (who was given each) and what
    /// each character perceived in a run played on the scripted model. Each item is a
    /// cloze put to one character at one story position; its gold is what that
    /// character could know there. Writes JSONL for `eval kbf` and `eval ablate`.
    Probes(ProbesArgs),
    /// Knowledge Boundary Fidelity (ReverieMem): multiple-choice probes to characters,
    /// KRf items (the character can know the answer) and KR items (it cannot: the right
    /// answer is E, "I cannot answer this from my own knowledge"). The story is replayed
    /// and stopped at each item's position; the item is asked there.
    Kbf(KbfArgs),
    /// Memory modules switched on and off (ReverieMem, DualMem, MOOM, BOOKMARKS): for
    /// each set, the scenario is played, its KBF probes answered from what the
    /// characters recall (no answer call), and a long generated run probes facts planted
    /// hundreds of lines earlier. One table: KBF, KRf, KR, LLM calls and prompt tokens
    /// per turn, memory items kept, probe QA and Recall@10.
    Ablate(AblateArgs),
    /// An ingested folder against answers a reader wrote (eval/answers/README.md):
    /// the narrator bound per chapter, speaker attribution over the quoted lines the
    /// answers list, roster precision and recall per scene (aligned by text position, so
    /// the ingest may cut scenes elsewhere), who may know each key fact, and leaks (a key
    /// fact given to a character the answers say could not know it).
    Ingest(IngestEvalArgs),
    /// KBF on whole books (ReverieMem's corpus): each book ingested or its ingest
    /// reused, every item of its file (written by reading it) asked where the story
    /// stands at the item's position, by the retrieval answerer, by it without the
    /// episodic or the semantic layer, and by the naive-RAG and profile-only baselines.
    /// Prints per book n_KRf, KRf, n_KR, KR and KBF, and the mean over books.
    Corpus(CorpusArgs),
    /// BookWorld's pairwise narrative judge: a language model compares story A with
    /// story B on anthropomorphism, character fidelity, immersion and setting, writing
    /// quality, and storyline (script mode) or creativity (free mode).
    ///
    /// Each pair is judged in both orders; a split verdict is a tie. Prints A's wins,
    /// ties and losses per dimension, with A's win rate (ties half) and its 95% Wilson
    /// interval; every judge prompt and answer goes to the audit file. `--runs N
    /// SCENARIO --a FLAGS --b FLAGS` plays both configurations N times and judges them.
    Judge(JudgeArgs),
    /// Voice per character (ReverieMem's stylistic monotony): distinct-1/2 of its
    /// lines, the cosine between every two characters' mean line vectors (the agents'
    /// embedder), and how close each one's lines sit to its own patterns' excerpts and
    /// to the nearest other character's. A cast where every two are close is flagged.
    Style(StyleArgs),
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
    Retrieval(crate::commands::bench::JsonArg),
    /// `dramatis ingest` on the deterministic path: a 100,000-word book made from the
    /// test book (places renamed in each copy), words per second and peak memory.
    Ingest(IngestBenchArgs),
    /// A played story's characters asked now and as of each scene's end (`ask
    /// --as-of`): model calls, prompt tokens and milliseconds per question, side by side.
    Ask(Box<crate::commands::bench_ask::AskBenchArgs>),
    /// One long open story (default 600 rounds, 4 characters) with the shards saved to
    /// disk: time per line by tenth of the story (flat is the goal), shard bytes per
    /// character at the end, peak memory.
    Story(crate::commands::bench_story::StoryBenchArgs),
    /// Open stories of 10, 100 and 1,000 characters on real agent processes, in each
    /// layout (pool, world, character): start-up time, lines per second, processes, and
    /// the agents' memory per character, peak and idle, and the shards' disk per
    /// character, empty and at the end. Runs that would not fit in
    /// memory are skipped and say so.
    Cast(Box<crate::commands::bench_cast::CastBenchArgs>),
    /// The JetStream log (three NATS nodes on loopback, installed by `scripts/setup.sh
    /// --nats`) beside the redb log: ms per line and lines per second of one scenario,
    /// alternated; then failover: the owner replica of a story killed mid-Advance and
    /// the time to the next event at the other replica.
    Cluster(crate::commands::bench_cluster::ClusterBenchArgs),
    /// Stories played while `serve` and its agents are killed (SIGKILL) at random
    /// points, each compared event by event with the same story played without a kill
    /// (scripted model): steps lost, duplicated and diverged, and seq gaps. Exits
    /// non-zero unless all are 0.
    Soak(crate::commands::bench_soak::SoakBenchArgs),
}
