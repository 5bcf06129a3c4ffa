//! `dramatis bench ask`: what an interview as of an earlier moment costs beside one
//! about now, on the same played world (scripted model, real embedder): model calls,
//! prompt tokens and milliseconds per question, side by side.

use std::path::PathBuf;

use anyhow::{Context as _, anyhow};
use clap::Args;
use dramatis_proto::v1::{AsOf, AskRequest, EventKind, as_of};
use dramatis_runtime::client::{ClientOptions, advance_to_end, describe, world_client};
use serde_json::json;

use super::bench::{JsonArg, print_json};
use crate::options::ModelArgs;
use crate::stack::LocalStack;

#[derive(Debug, Args)]
pub struct AskBenchArgs {
    /// Scenario to play (a shipped name or a scenario file).
    #[arg(default_value = "study-in-scarlet")]
    pub scenario: String,
    /// The question put to every character, now and as of each scene's end.
    #[arg(long, default_value = "What happened, and who was there with you?")]
    pub question: String,
    /// The answers' model (the scripted one unless an endpoint is given); the story's
    /// turns are played on the scripted model.
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub output: JsonArg,
}

/// The cost of a kind of question, summed.
#[derive(Debug, Default, serde::Serialize)]
struct Cost {
    asks: u32,
    llm_calls: u64,
    prompt_tokens: u64,
    ms: u64,
}

impl Cost {
    fn per_ask(&self, total: u64) -> f64 {
        total as f64 / f64::from(self.asks.max(1))
    }
}

fn scenario_file(name: &str) -> anyhow::Result<PathBuf> {
    if let Some(path) = dramatis_scenario::local_file(name)? {
        return Ok(path);
    }
    let shipped = dramatis_runtime::models::scenarios_dir()
        .join(name)
        .join("scenario.toml");
    shipped
        .is_file()
        .then_some(shipped)
        .with_context(|| format!("no scenario file, and no shipped scenario named {name:?}"))
}

pub async fn bench_ask(args: &AskBenchArgs) -> anyhow::Result<()> {
    let path = scenario_file(&args.scenario)?;
    let mut model = args.model.clone();
    if model.endpoint.llm_endpoint.is_none() {
        model.scripted.get_or_insert_with(|| "builtin".into());
    }
    let stack = LocalStack::for_scenario(model, &path).await?;
    let mut client = world_client(&ClientOptions::local(&stack.server_url)).await?;
    let world = dramatis_eval::create_world_from_file(&mut client, &path).await?;
    eprintln!("playing {} to its end (scripted model)…", args.scenario);
    let played = advance_to_end(&mut client, &world)
        .await
        .map_err(|e| anyhow!("the story stopped: {}", describe(&e.status)))?;
    let info = played.world.context("Advance returned no world")?;
    let scenes = played
        .events
        .iter()
        .filter(|e| e.kind() == EventKind::SceneStart)
        .count();
    let (mut now, mut then) = (Cost::default(), Cost::default());
    for character in &info.characters {
        for scene in std::iter::once(None).chain((1..=scenes).map(Some)) {
            let started = std::time::Instant::now();
            let answer = client
                .ask(AskRequest {
                    world_id: world.clone(),
                    character: character.id.clone(),
                    question: args.question.clone(),
                    as_of: scene.map(|n| AsOf {
                        point: Some(as_of::Point::Scene(n.to_string())),
                    }),
                    ..AskRequest::default()
                })
                .await
                .map_err(|s| anyhow!("ask {} failed: {}", character.id, describe(&s)))?
                .into_inner();
            let cost = if scene.is_some() { &mut then } else { &mut now };
            let usage = answer.usage.unwrap_or_default();
            cost.asks += 1;
            cost.llm_calls += u64::from(usage.llm_calls);
            cost.prompt_tokens += u64::from(usage.prompt_tokens);
            cost.ms += u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        }
    }
    stack.stop(Some(&world)).await;
    println!(
        "ask on {} · {} characters · {} scenes · {} events",
        args.scenario,
        info.characters.len(),
        scenes,
        info.next_seq - 1
    );
    println!(
        "{:<28} {:>6} {:>12} {:>16} {:>10}",
        "", "asks", "calls/ask", "prompt tok/ask", "ms/ask"
    );
    for (name, cost) in [("now", &now), ("as of each scene's end", &then)] {
        println!(
            "{name:<28} {:>6} {:>12.2} {:>16.1} {:>10.1}",
            cost.asks,
            cost.per_ask(cost.llm_calls),
            cost.per_ask(cost.prompt_tokens),
            cost.per_ask(cost.ms)
        );
    }
    print_json(
        &args.output,
        "ask",
        &json!({ "scenario": args.scenario, "now": now, "as_of": then }),
    )
}
