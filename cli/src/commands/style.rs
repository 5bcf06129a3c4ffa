//! `dramatis eval style`: each character's voice measured over worlds on a service or
//! runs it plays (`dramatis_eval::style`).

use std::collections::BTreeMap;

use anyhow::{Context as _, bail};
use clap::Args;
use dramatis_eval::style::{FLAT_COSINE, StyleReport, Voice, measure};
use dramatis_eval::walk::Logged;
use dramatis_scenario::Scenario;

use crate::options::{ModelArgs, ServerArg};

#[derive(Debug, Args)]
pub struct StyleArgs {
    /// World ids on `--server` (one cast's lines pooled over them); with `--runs`, one
    /// scenario to play instead.
    #[arg(required = true, value_name = "WORLD... | SCENARIO")]
    pub worlds: Vec<String>,
    /// Play the scenario this many times (with the model flags) and measure the runs.
    #[arg(long, value_name = "N")]
    pub runs: Option<usize>,
    #[command(flatten)]
    pub server: ServerArg,
    /// The model `--runs` plays with.
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub output: crate::commands::bench::JsonArg,
}

/// The scenario a world played, when it can be loaded by name or path.
fn scenario_of(logged: &Logged) -> Option<Scenario> {
    let path = dramatis_eval::ablation::resolve_scenario(&logged.scenario).ok()?;
    Scenario::load(&path).ok()
}

/// The cast's voices over `worlds`: each speaker's lines (the model's, not stock
/// fallbacks), with its patterns' excerpts from the scenario when it is found.
fn voices(worlds: &[Logged]) -> Vec<Voice> {
    let mut cast: BTreeMap<String, Voice> = BTreeMap::new();
    for logged in worlds {
        let scenario = scenario_of(logged);
        for event in logged.events.iter().filter(|e| e.turn > 0 && !e.fallback) {
            let voice = cast.entry(event.speaker.clone()).or_insert_with(|| {
                let character = scenario
                    .as_ref()
                    .and_then(|s| s.characters.iter().find(|c| c.id == event.speaker));
                Voice {
                    id: event.speaker.clone(),
                    name: event.speaker_name.clone(),
                    lines: Vec::new(),
                    excerpts: character
                        .map(|c| c.patterns.iter().flat_map(|p| p.excerpts.clone()).collect())
                        .unwrap_or_default(),
                }
            });
            voice.lines.push(event.text.clone());
        }
    }
    cast.into_values().collect()
}

pub async fn style(args: &StyleArgs) -> anyhow::Result<()> {
    let worlds = if let Some(runs) = args.runs {
        let [scenario] = args.worlds.as_slice() else {
            bail!(
                "with --runs, give one scenario, not {} names",
                args.worlds.len()
            );
        };
        crate::commands::judge::play_runs(scenario, args.model.clone(), runs, "style").await?
    } else {
        let mut worlds = Vec::with_capacity(args.worlds.len());
        for world in &args.worlds {
            let (_, logged) = crate::commands::export::read_world(&args.server, world).await?;
            worlds.push(logged);
        }
        worlds
    };
    let cast = voices(&worlds);
    if cast.iter().all(|v| v.lines.is_empty()) {
        bail!("no character spoke a line of its own (every turn fell back, or none was played)");
    }
    let embedder = dramatis_embed::OnnxEmbedder::load(&crate::models::embedder_config(
        args.model.embedder_dir.as_deref(),
    ))
    .context("eval style embeds lines with the agents' embedder")?;
    let report = measure(&cast, &embedder).await?;
    print_table(&report);
    crate::commands::bench::print_json(&args.output, "style", &report)
}

fn print_table(report: &StyleReport) {
    println!(
        "{:<22} {:>5} {:>10} {:>10} {:>13}  nearest other's excerpts",
        "character", "lines", "distinct-1", "distinct-2", "own excerpts"
    );
    for c in &report.characters {
        let own = c.own_excerpts.map_or("—".to_owned(), |x| format!("{x:.3}"));
        let other = c
            .nearest_other_excerpts
            .as_ref()
            .map_or("—".to_owned(), |(id, x)| format!("{x:.3} ({id})"));
        println!(
            "{:<22} {:>5} {:>10.3} {:>10.3} {:>13}  {other}",
            c.name, c.lines, c.distinct_1, c.distinct_2, own
        );
    }
    println!("\ncosine between characters' mean lines:");
    for p in &report.pairs {
        println!("  {:<14} {:<14} {:.3}", p.a, p.b, p.cosine);
    }
    if let Some(mean) = report.mean_pair_cosine {
        println!("  mean {mean:.3}");
    }
    if report.flat {
        println!(
            "FLAT CAST: every two characters' lines sit within cosine {FLAT_COSINE}: they speak in one voice"
        );
    }
}
