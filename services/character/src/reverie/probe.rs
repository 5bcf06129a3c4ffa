//! Self-Probe with Sufficient (ReverieMem Algorithm 1): while memory covers the query
//! only in part, the model proposes probes, and what they find joins the pool.

use dramatis_embed::Embedder;
use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel, ResponseSchema, parse_json};
use dramatis_memory::{EpisodicMemory, Fact};
use dramatis_proto::v1::Usage;
use serde::Deserialize;
use serde_json::json;

use crate::error::AgentError;
use crate::shard::{AuditEntry, Shard};

use super::search::{Query, refs, retrieve};
use super::settings::RecallSettings;

/// Name of the Self-Probe schema.
pub const SELF_PROBE_SCHEMA: &str = "self_probe";

#[derive(Debug, Deserialize)]
struct ProbeReply {
    #[serde(default)]
    sufficient: bool,
    #[serde(default)]
    probes: Vec<String>,
}

/// Self-Probe with Sufficient: while the best fact found scores under
/// `settings.covered`, asks the model for up to three more probes and adds what they
/// find to `pool`, for at most `query.rounds` rounds. The rounds run, the first search
/// counted. Every prompt is recorded in the shard's audit.
pub(super) async fn self_probe(
    shard: &mut Shard,
    query: &Query<'_>,
    anchor: Option<&EpisodicMemory>,
    pool: &mut Vec<(Fact, f32)>,
    settings: &RecallSettings,
    (embedder, model): (&dyn Embedder, &dyn LanguageModel),
    usage: &mut Usage,
) -> Result<u32, AgentError> {
    let me = shard.id().to_owned();
    let mut rounds = 1;
    let mut asked: Vec<String> = Vec::new();
    let best = |pool: &[(Fact, f32)]| pool.iter().map(|(_, s)| *s).fold(0.0, f32::max);
    while best(pool) < settings.covered && rounds <= query.rounds {
        let request = self_probe_request(shard, query.text, anchor, pool, &asked);
        let items = refs(anchor, pool);
        shard.record_prompt(AuditEntry {
            purpose: "self_probe".into(),
            prompt: request.prompt_text(),
            items,
            timestamp_ms: dramatis_runtime::now_ms(),
            flagged: Vec::new(),
            guard: Vec::new(),
        });
        let completion = model.complete(&request, None).await?;
        usage.count_call(completion.prompt_tokens, completion.completion_tokens);
        let Some((reply, _)) = parse_json::<ProbeReply>(&completion.text, |_| true) else {
            tracing::warn!(character = me, output = %completion.text, "unusable self-probe output");
            break;
        };
        let fresh: Vec<String> = reply
            .probes
            .into_iter()
            .map(|p| p.trim().to_owned())
            .filter(|p| !p.is_empty() && !asked.contains(p))
            .take(3)
            .collect();
        if reply.sufficient || fresh.is_empty() {
            break;
        }
        let vectors = embedder.embed(&fresh).await?;
        let texts: Vec<&str> = fresh.iter().map(String::as_str).collect();
        let found = retrieve(shard, &me, &vectors, &texts, settings);
        asked.extend(fresh);
        for (fact, score) in found {
            if !pool.iter().any(|(f, _)| f.id == fact.id) {
                pool.push((fact, score));
            }
        }
        pool.sort_by(|a, b| b.1.total_cmp(&a.1));
        pool.truncate(settings.pool_max);
        rounds += 1;
    }
    Ok(rounds)
}

fn self_probe_request(
    shard: &Shard,
    question: &str,
    anchor: Option<&EpisodicMemory>,
    pool: &[(Fact, f32)],
    asked: &[String],
) -> CompletionRequest {
    let name = &shard.profile.name;
    let system = format!(
        "You help {name} remember. Decide whether what {name} recalls below is enough to \
         respond from {name}'s own knowledge. If it is not, write up to three short search \
         phrases for facts {name} might remember. Reply with JSON."
    );
    let mut user = format!("Question: {}", question.trim());
    if let Some(anchor) = anchor {
        dramatis_runtime::push!(user, "\nScene memory: {}", anchor.text);
    }
    user.push_str("\nRecalled:");
    if pool.is_empty() {
        user.push_str(" nothing yet");
    }
    for (fact, _) in pool {
        dramatis_runtime::push!(user, "\n- {}", fact.text);
    }
    if !asked.is_empty() {
        dramatis_runtime::push!(user, "\nAlready searched: {}", asked.join("; "));
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "sufficient": {"type": "boolean"},
            "probes": {
                "type": "array",
                "maxItems": 3,
                "items": {"type": "string", "minLength": 3, "maxLength": 80}
            }
        },
        "required": ["sufficient", "probes"]
    });
    CompletionRequest::new(vec![ChatMessage::system(system), ChatMessage::user(user)])
        .with_max_tokens(80)
        .with_temperature(0.0)
        .with_schema(ResponseSchema {
            name: SELF_PROBE_SCHEMA.into(),
            schema,
        })
}
