//! `dramatis export`: a world's story written out to keep, as a transcript, Markdown, or
//! prose a language model rewrites scene by scene.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;
use dramatis_eval::export::{Format, markdown, prose, transcript};
use dramatis_eval::walk::Logged;
use dramatis_runtime::client::world_client;

use crate::options::{EndpointArgs, ServerArg};
use crate::spawn::{Spawned, start_builtin_llm};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FormatArg {
    /// Plain text, one line per event, as `dramatis run` prints into a file.
    Transcript,
    /// Markdown: a heading per scene, speakers in bold, actions in italics.
    Markdown,
    /// Narrative prose: each scene's transcript rewritten by the language model
    /// (BookWorld's story step). A scene the model fails on keeps its transcript.
    Prose,
    /// One character (`--character`) as it stands, as a V3 character card: a PNG
    /// (`ccv3` and `chara` chunks) and its JSON beside it. Its profile and its
    /// `character_book` hold only what that character knows.
    Card,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The world's id (see `dramatis worlds`).
    pub world: String,
    #[arg(long, value_enum, default_value_t = FormatArg::Markdown)]
    pub format: FormatArg,
    /// The character to write out (`--format card`): its id, name or alias.
    #[arg(long, required_if_eq("format", "card"))]
    pub character: Option<String>,
    /// Write the story here instead of to standard output (`--format card`: the PNG's
    /// path, default `CHARACTER.png`, with the JSON beside it).
    #[arg(long, short)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub server: ServerArg,
    /// The model that writes prose (`--format prose`); without an endpoint the built-in
    /// model is started, which writes poor prose.
    #[command(flatten)]
    pub endpoint: EndpointArgs,
}

/// The world `world` on the service `server` names, read whole: its title and log.
pub(crate) async fn read_world(
    server: &ServerArg,
    world: &str,
) -> anyhow::Result<(String, Logged)> {
    let mut client = world_client(&server.client_options()).await?;
    let logged = Logged::read(&mut client, world).await?;
    Ok((logged.title.clone(), logged))
}

/// A language model from `endpoint`, or the built-in one started for this command (kept
/// running while the returned process handle lives).
pub(crate) async fn model_or_builtin(
    endpoint: &EndpointArgs,
    logs: &std::path::Path,
) -> anyhow::Result<(
    std::sync::Arc<dyn dramatis_llm::LanguageModel>,
    Option<Spawned>,
)> {
    let mut endpoint = endpoint.clone();
    let mut spawned = None;
    if endpoint.llm_endpoint.is_none() {
        eprintln!("starting the built-in model (SmolLM2-135M-Instruct on llama.cpp)…");
        let (process, url) = start_builtin_llm(logs).await?;
        endpoint.llm_endpoint = Some(url);
        spawned = Some(process);
    }
    let url = endpoint.llm_endpoint.clone().unwrap_or_default();
    let model = crate::models::openai_client(url, &endpoint.llm_model, &endpoint)?;
    Ok((model, spawned))
}

/// `--format card`: the character as it stands, from the world, as PNG and JSON.
async fn export_card(args: &ExportArgs, character: &str) -> anyhow::Result<()> {
    use dramatis_ingest::card::{Standing, export};
    let mut client = world_client(&args.server.client_options()).await?;
    let view = client
        .export_character(dramatis_proto::v1::ExportCharacterRequest {
            world_id: args.world.clone(),
            character: character.to_owned(),
        })
        .await
        .map_err(|s| anyhow::anyhow!("cannot export {character:?}: {}", s.message()))?
        .into_inner();
    let standing = Standing::from_export(&view);
    let profile = view.profile.unwrap_or_default();
    let card = export(&standing);
    let png_path = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.png", profile.id)));
    let json_path = png_path.with_extension("json");
    let png = dramatis_formats::card::to_png(&card)?;
    std::fs::write(&png_path, png)
        .with_context(|| format!("cannot write {}", png_path.display()))?;
    let json = serde_json::to_string_pretty(&card.to_v3_json())?;
    std::fs::write(&json_path, json)
        .with_context(|| format!("cannot write {}", json_path.display()))?;
    println!(
        "wrote {} and {}: {} as a V3 card, {} lorebook entries it holds",
        png_path.display(),
        json_path.display(),
        profile.name,
        standing.facts.len() + standing.revealed.len()
    );
    Ok(())
}

pub async fn export(args: &ExportArgs) -> anyhow::Result<()> {
    if args.format == FormatArg::Card {
        return export_card(args, args.character.as_deref().unwrap_or_default()).await;
    }
    let (title, logged) = read_world(&args.server, &args.world).await?;
    let format = match args.format {
        FormatArg::Transcript => Format::Transcript,
        FormatArg::Markdown => Format::Markdown,
        FormatArg::Prose | FormatArg::Card => Format::Prose,
    };
    let text = match format {
        Format::Transcript => transcript(&logged.events),
        Format::Markdown => markdown(&title, &logged.events),
        Format::Prose => {
            let logs = tempfile::Builder::new()
                .prefix("dramatis-export-")
                .tempdir()?;
            let (model, _llm) = model_or_builtin(&args.endpoint, logs.path()).await?;
            let bar = indicatif::ProgressBar::new(0).with_style(
                indicatif::ProgressStyle::with_template(
                    "writing prose: scene {pos}/{len} {bar:30}",
                )
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            let (text, report) = prose(&title, &logged.events, model.as_ref(), |done, all| {
                bar.set_length(all as u64);
                bar.set_position(done as u64);
            })
            .await;
            bar.finish_and_clear();
            eprintln!(
                "{} scenes in prose ({} model calls, {} + {} tokens){}",
                report.scenes,
                report.calls,
                report.prompt_tokens,
                report.completion_tokens,
                if report.kept_as_transcript == 0 {
                    String::new()
                } else {
                    format!(
                        "; {} kept as transcript: the model gave no prose for them",
                        report.kept_as_transcript
                    )
                }
            );
            text
        }
    };
    match &args.out {
        Some(path) => std::fs::write(path, &text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(())
}
