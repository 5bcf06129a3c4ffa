//! Turns model arguments into a language model for agents.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use dramatis_llm::{LanguageModel, OpenAiClient, OpenAiConfig, RoleModels, ScriptedModel};

use crate::args::ModelArgs;

/// The models an agent uses, from its arguments. The endpoint must be set unless the
/// scripted model was chosen.
pub fn role_models(args: &ModelArgs) -> anyhow::Result<RoleModels> {
    let model: Arc<dyn LanguageModel> = if let Some(fixture) = &args.scripted {
        Arc::new(scripted(fixture)?)
    } else {
        let endpoint = args.llm_endpoint.clone().context(
            "no language model: pass --llm-endpoint (or DRAMATIS_LLM_ENDPOINT) or --scripted",
        )?;
        let mut config = OpenAiConfig::new(endpoint, args.llm_model.clone());
        config.api_key.clone_from(&args.llm_api_key);
        config.idle_timeout = Duration::from_secs(args.llm_timeout.max(1));
        Arc::new(OpenAiClient::new(config)?)
    };
    Ok(RoleModels::uniform(model))
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
    if let Some(endpoint) = &args.llm_endpoint {
        out.extend(["--llm-endpoint".to_owned(), endpoint.clone()]);
    }
    out.extend([
        "--llm-model".to_owned(),
        args.llm_model.clone(),
        "--llm-timeout".to_owned(),
        args.llm_timeout.to_string(),
    ]);
    // The API key travels through the environment, never on a command line.
    out
}
