//! Self-Probe with Sufficient (ReverieMem Algorithm 1): while memory covers the query
//! only in part, the model proposes probes, and what they find joins the pool.

use serde::Deserialize;
use serde_json::json;

use crate::modules::{Call, Mind, MindError, Spent};
use crate::{EpisodicMemory, Fact};

use super::Reverie;
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
/// counted. Every prompt goes through `mind`, which audits it.
pub(super) async fn self_probe(
    reverie: &Reverie<'_>,
    query: &Query<'_>,
    anchor: Option<&EpisodicMemory>,
    pool: &mut Vec<(Fact, f32)>,
    settings: &RecallSettings,
    mind: &dyn Mind,
    spent: &mut Spent,
) -> Result<u32, MindError> {
    let me = reverie.character;
    let mut rounds = 1;
    let mut asked: Vec<String> = Vec::new();
    let best = |pool: &[(Fact, f32)]| pool.iter().map(|(_, s)| *s).fold(0.0, f32::max);
    while best(pool) < settings.covered && rounds <= query.rounds {
        let call = self_probe_call(reverie.name, query.text, anchor, pool, &asked);
        let replied = mind.call(call).await?;
        spent.add(replied.spent);
        let Some(reply) = replied
            .value
            .and_then(|v| serde_json::from_value::<ProbeReply>(v).ok())
        else {
            tracing::warn!(character = me, output = %replied.text, "unusable self-probe output");
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
        let vectors = mind.try_embed(&fresh).await?;
        let texts: Vec<&str> = fresh.iter().map(String::as_str).collect();
        let found = retrieve(reverie.layers, me, &vectors, &texts, settings);
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

/// The Self-Probe call for `question`, asked for the character called `name`.
fn self_probe_call<'a>(
    name: &str,
    question: &str,
    anchor: Option<&EpisodicMemory>,
    pool: &[(Fact, f32)],
    asked: &[String],
) -> Call<'a> {
    let system = format!(
        "You help {name} remember. Decide whether what {name} recalls below is enough to \
         respond from {name}'s own knowledge. If it is not, write up to three short search \
         phrases for facts {name} might remember. Reply with JSON."
    );
    let mut user = format!("Question: {}", question.trim());
    if let Some(anchor) = anchor {
        dramatis_base::push!(user, "\nScene memory: {}", anchor.text);
    }
    user.push_str("\nRecalled:");
    if pool.is_empty() {
        user.push_str(" nothing yet");
    }
    for (fact, _) in pool {
        dramatis_base::push!(user, "\n- {}", fact.text);
    }
    if !asked.is_empty() {
        dramatis_base::push!(user, "\nAlready searched: {}", asked.join("; "));
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
    Call {
        purpose: "self_probe",
        system,
        user,
        max_tokens: 80,
        temperature: 0.0,
        schema_name: SELF_PROBE_SCHEMA,
        schema,
        items: refs(anchor, pool),
    }
}
