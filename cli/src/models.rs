//! Turns model arguments into a language model for agents.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use dramatis_character::{AgentOptions, GuardMode, MemoryWrites};
use dramatis_llm::{
    LanguageModel, ModelRole, OpenAiClient, OpenAiConfig, RoleModels, ScriptedModel,
};

use crate::options::{BoundaryGuardArg, EndpointArgs, MemoryWritesArg, ModelArgs, RecallBy};

/// The models for each role, from the arguments. The character endpoint must be set
/// unless the scripted model was chosen; the narrator and answer roles fall back to the
/// character model, and take their own endpoint, model name or (for answers) scripted
/// fixture when given.
pub fn role_models(args: &ModelArgs) -> anyhow::Result<RoleModels> {
    let mut models = if let Some(fixture) = &args.scripted {
        RoleModels::uniform(Arc::new(scripted(fixture)?))
    } else {
        let endpoint = args.endpoint.llm_endpoint.clone().context(
            "no language model: pass --llm-endpoint (or DRAMATIS_LLM_ENDPOINT) or --scripted",
        )?;
        RoleModels::uniform(client(args, endpoint, &args.endpoint.llm_model)?)
    };
    for (role, role_endpoint, role_model) in [
        (
            ModelRole::Narrator,
            &args.narrator_endpoint,
            &args.narrator_model,
        ),
        (ModelRole::Answer, &args.answer_endpoint, &args.answer_model),
    ] {
        if role_endpoint.is_some() || role_model.is_some() {
            let endpoint = role_endpoint
                .clone()
                .or_else(|| args.endpoint.llm_endpoint.clone())
                .with_context(|| {
                    format!(
                        "the {} model needs an endpoint: pass --{}-endpoint",
                        role.as_str(),
                        role.as_str()
                    )
                })?;
            let model = role_model.as_deref().unwrap_or(&args.endpoint.llm_model);
            models = models.with_role(role, client(args, endpoint, model)?);
        }
    }
    if let Some(fixture) = &args.answer_scripted {
        models = models.with_role(ModelRole::Answer, Arc::new(scripted(fixture)?));
    }
    Ok(models)
}

fn client(
    args: &ModelArgs,
    endpoint: String,
    model: &str,
) -> anyhow::Result<Arc<dyn LanguageModel>> {
    openai_client(endpoint, model, &args.endpoint)
}

/// A client for an OpenAI-compatible endpoint, with the key and time limits of `args`.
pub fn openai_client(
    endpoint: String,
    model: &str,
    args: &EndpointArgs,
) -> anyhow::Result<Arc<dyn LanguageModel>> {
    let mut config = OpenAiConfig::new(endpoint, model);
    config.api_key.clone_from(&args.llm_api_key);
    config.idle_timeout = Duration::from_secs(args.llm_timeout.max(1));
    config.deadline = Duration::from_secs(args.llm_deadline.max(1));
    config.dry = args.llm_dry.unwrap_or(false);
    Ok(Arc::new(OpenAiClient::new(config)?))
}

/// The scripted model: `builtin` for generic lines, or a JSON fixture file.
pub fn scripted(fixture: &str) -> anyhow::Result<ScriptedModel> {
    if fixture == "builtin" {
        return Ok(ScriptedModel::default().without_recording());
    }
    let text = std::fs::read_to_string(fixture)
        .with_context(|| format!("cannot read scripted-model fixture {fixture}"))?;
    Ok(ScriptedModel::from_json(&text)?.without_recording())
}

/// Arguments that pass the same model choice on to a child process.
pub fn child_args(args: &ModelArgs) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(fixture) = &args.scripted {
        out.extend(["--scripted".to_owned(), fixture.clone()]);
    }
    if let Some(endpoint) = &args.endpoint.llm_endpoint {
        out.extend(["--llm-endpoint".to_owned(), endpoint.clone()]);
    }
    for (flag, value) in [
        ("--narrator-endpoint", &args.narrator_endpoint),
        ("--narrator-model", &args.narrator_model),
        ("--answer-endpoint", &args.answer_endpoint),
        ("--answer-model", &args.answer_model),
        ("--answer-scripted", &args.answer_scripted),
    ] {
        if let Some(value) = value {
            out.extend([flag.to_owned(), value.clone()]);
        }
    }
    if let Some(dir) = &args.embedder_dir {
        out.extend([
            "--embedder-dir".to_owned(),
            dir.to_string_lossy().into_owned(),
        ]);
    }
    let writes = match args.memory_writes {
        MemoryWritesArg::Auto => "auto",
        MemoryWritesArg::Digest => "digest",
        MemoryWritesArg::Model => "model",
    };
    let guard = match args.boundary_guard {
        BoundaryGuardArg::Auto => "auto",
        BoundaryGuardArg::Off => "off",
        BoundaryGuardArg::Flag => "flag",
        BoundaryGuardArg::Regenerate => "regenerate",
    };
    out.extend(["--boundary-guard".to_owned(), guard.to_owned()]);
    if args.no_echo_guard {
        out.push("--no-echo-guard".to_owned());
    }
    if let Some(dry) = args.endpoint.llm_dry {
        out.extend(["--llm-dry".to_owned(), dry.to_string()]);
    }
    if let Some(modules) = &args.memory_modules {
        out.extend(["--memory-modules".to_owned(), modules.to_string()]);
    }
    if let Some(keep) = args.audit_keep {
        out.extend(["--audit-keep".to_owned(), keep.to_string()]);
    }
    out.extend([
        "--memory-writes".to_owned(),
        writes.to_owned(),
        "--llm-model".to_owned(),
        args.endpoint.llm_model.clone(),
        "--llm-timeout".to_owned(),
        args.endpoint.llm_timeout.to_string(),
        "--llm-deadline".to_owned(),
        args.endpoint.llm_deadline.to_string(),
        "--answer-temperature".to_owned(),
        args.answer_temperature.to_string(),
        "--layers".to_owned(),
        args.layers.to_string(),
        "--recall-by".to_owned(),
        args.recall_by.name().to_owned(),
        "--self-probe".to_owned(),
        if args.self_probe { "on" } else { "off" }.to_owned(),
        "--evidence-gate".to_owned(),
        if args.evidence_gate { "on" } else { "off" }.to_owned(),
        "--option-search".to_owned(),
        if args.option_search { "on" } else { "off" }.to_owned(),
        "--synonyms".to_owned(),
        if args.synonyms { "on" } else { "off" }.to_owned(),
    ]);
    // The API key travels through the environment (`child_env`), never on a command line.
    out
}

/// Environment a child process needs for the same model choice: the API key, which a
/// command line would show to every user of the machine.
#[must_use]
pub fn child_env(args: &ModelArgs) -> Vec<(&'static str, String)> {
    args.endpoint
        .llm_api_key
        .iter()
        .map(|key| ("DRAMATIS_LLM_API_KEY", key.clone()))
        .collect()
}

/// The default embedder's files (all-MiniLM-L6-v2 int8 on the set-up's ONNX Runtime),
/// or the model directory given.
#[must_use]
pub fn embedder_config(model_dir: Option<&std::path::Path>) -> dramatis_embed::OnnxEmbedderConfig {
    use dramatis_runtime::models::{DEFAULT_EMBEDDER_DIR, ONNX_RUNTIME_LIBRARY, model_path};
    dramatis_embed::OnnxEmbedderConfig::new(
        model_dir.map_or_else(
            || model_path(DEFAULT_EMBEDDER_DIR),
            std::path::Path::to_path_buf,
        ),
        model_path(ONNX_RUNTIME_LIBRARY),
    )
}

/// Who writes scene memories: `auto` means the model for an endpoint the user gave and
/// the digest for the scripted model. (A stack that starts the built-in model resolves
/// `auto` to the digest before it starts agents: a 135M model writes poor memories.)
#[must_use]
pub fn memory_writes(args: &ModelArgs) -> MemoryWrites {
    match args.memory_writes {
        MemoryWritesArg::Digest => MemoryWrites::Digest,
        MemoryWritesArg::Model => MemoryWrites::Model,
        MemoryWritesArg::Auto if args.scripted.is_some() => MemoryWrites::Digest,
        MemoryWritesArg::Auto => MemoryWrites::Model,
    }
}

/// What the boundary guard does: `auto` means regenerate for an endpoint the user gave
/// and flag for the scripted model (a stack that starts the built-in model resolves
/// `auto` to flag before it starts agents: a retry rarely helps a 135M model).
#[must_use]
pub fn boundary_guard(args: &ModelArgs) -> GuardMode {
    match args.boundary_guard {
        BoundaryGuardArg::Off => GuardMode::Off,
        BoundaryGuardArg::Flag => GuardMode::Flag,
        BoundaryGuardArg::Regenerate => GuardMode::Regenerate,
        BoundaryGuardArg::Auto if args.scripted.is_some() => GuardMode::Flag,
        BoundaryGuardArg::Auto => GuardMode::Regenerate,
    }
}

/// Everything an agent process needs: models, its own embedder, memory settings.
pub fn agent_options(
    args: &ModelArgs,
    data_dir: Option<std::path::PathBuf>,
) -> anyhow::Result<AgentOptions> {
    let embedder =
        dramatis_embed::OnnxEmbedder::load(&embedder_config(args.embedder_dir.as_deref()))?;
    let mut options = AgentOptions::new(role_models(args)?, Arc::new(embedder));
    options.memory_writes = memory_writes(args);
    options.boundary_guard = boundary_guard(args);
    options.echo_guard = !args.no_echo_guard;
    options.memory_modules = args.memory_modules;
    options.answer_temperature = args.answer_temperature;
    options.recall.layers = args.layers;
    options.recall.dense = args.recall_by != RecallBy::Words;
    options.recall.lexical = args.recall_by != RecallBy::Vectors;
    if !args.self_probe {
        options.recall.answer_rounds = 0;
        options.recall.act_rounds = 0;
    }
    options.recall.gate = args
        .evidence_gate
        .then(dramatis_memory::evidence::Gate::default);
    options.recall.option_search = args.option_search;
    options.recall.synonyms = args.synonyms;
    options.data_dir = data_dir;
    options.audit_keep = args.audit_keep.filter(|&keep| keep > 0);
    Ok(options)
}
