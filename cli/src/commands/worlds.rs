//! `dramatis create` and `dramatis worlds`: making and listing worlds on a running
//! world service.

use clap::Args;

use anyhow::{Context as _, anyhow};
use dramatis_proto::v1::{
    DeleteWorldRequest, ForkRequest, ListWorldsRequest, RegenerateRequest, WorldInfo, WorldStatus,
    create_world_request,
};

use super::run::scenario_source;
use crate::options::ServerArg;
use dramatis_runtime::client::{create_world, describe, world_client};

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// Shipped scenario name, scenario file, or sandbox spec file. A sandbox spec is
    /// sent inline; another file is sent as its path, which the service reads only
    /// inside its scenario directories (`serve --scenarios-dir`, `--scenario-root`).
    pub scenario: String,
    /// Id for the new world (default: generated).
    #[arg(long)]
    pub id: Option<String>,
    #[command(flatten)]
    pub server: ServerArg,
}

/// The CreateWorld source for `scenario`: a shipped name, a scenario file (checked here
/// first, so a mistake names the local file and line), or a sandbox spec file, which is
/// sent inline so the server needs no copy of it.
fn source(scenario: &str) -> anyhow::Result<create_world_request::Source> {
    if let Some(path) = dramatis_scenario::local_file(scenario)? {
        let loaded = dramatis_scenario::Scenario::load(&path)?;
        if loaded.open.is_some() {
            let spec = dramatis_scenario::sandbox::scenario_to_spec(&loaded)
                .context("not an open story")?;
            return Ok(create_world_request::Source::Sandbox(spec));
        }
    }
    scenario_source(scenario)
}

pub async fn create(args: CreateArgs) -> anyhow::Result<()> {
    let source = source(&args.scenario)?;
    let mut client = world_client(&args.server.client_options()).await?;
    let info = create_world(&mut client, source, args.id.as_deref().unwrap_or_default()).await?;
    println!("{}", info.world_id);
    eprintln!(
        "created {:?} ({}). Next: `dramatis play {id} <character>`, `dramatis watch {id}`, \
         or open {}/viewer/#world={id}",
        info.title,
        progress(&info),
        args.server.server.trim_end_matches('/'),
        id = info.world_id,
    );
    Ok(())
}

pub async fn worlds(server: ServerArg) -> anyhow::Result<()> {
    let mut client = world_client(&server.client_options()).await?;
    let listed = client
        .list_worlds(ListWorldsRequest {})
        .await
        .map_err(|s| anyhow!("cannot list worlds: {}", describe(&s)))?
        .into_inner()
        .worlds;
    if listed.is_empty() {
        eprintln!("no worlds yet: create one with `dramatis create <scenario>`");
    }
    for info in &listed {
        let branch = if info.forked_from.is_empty() {
            String::new()
        } else {
            format!(
                "\tbranch of {} after event {}",
                info.forked_from, info.fork_seq
            )
        };
        println!(
            "{}\t{}\t{}\t{} turns{branch}",
            info.world_id,
            info.title,
            progress(info),
            info.total_turns
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Id of the world to delete.
    pub world: String,
    #[command(flatten)]
    pub server: ServerArg,
}

pub async fn delete(args: DeleteArgs) -> anyhow::Result<()> {
    let mut client = world_client(&args.server.client_options()).await?;
    client
        .delete_world(DeleteWorldRequest {
            world_id: args.world.clone(),
        })
        .await
        .map_err(|s| anyhow!("cannot delete {:?}: {}", args.world, describe(&s)))?;
    eprintln!("deleted {:?}", args.world);
    Ok(())
}

#[derive(Debug, Args)]
pub struct ForkArgs {
    /// Id of the world to fork.
    pub world: String,
    /// How many of its events the fork keeps (`dramatis watch` numbers them; 0 starts
    /// the story again).
    #[arg(long, value_name = "SEQ")]
    pub at: u64,
    /// Id for the new world (default: generated).
    #[arg(long)]
    pub id: Option<String>,
    #[command(flatten)]
    pub server: ServerArg,
}

pub async fn fork(args: ForkArgs) -> anyhow::Result<()> {
    let mut client = world_client(&args.server.client_options()).await?;
    let info = client
        .fork(ForkRequest {
            world_id: args.world.clone(),
            at_seq: args.at,
            new_world_id: args.id.unwrap_or_default(),
        })
        .await
        .map_err(|s| anyhow!("cannot fork {:?}: {}", args.world, describe(&s)))?
        .into_inner();
    println!("{}", info.world_id);
    eprintln!(
        "forked {:?} at event {} ({}); both go on apart. Next: `dramatis advance {}`",
        args.world,
        args.at,
        progress(&info),
        info.world_id,
    );
    Ok(())
}

#[derive(Debug, Args)]
pub struct RegenerateArgs {
    /// Id of the world whose last line is asked again.
    pub world: String,
    /// Id for the new world (default: generated).
    #[arg(long)]
    pub id: Option<String>,
    #[command(flatten)]
    pub server: ServerArg,
}

pub async fn regenerate(args: RegenerateArgs) -> anyhow::Result<()> {
    let mut client = world_client(&args.server.client_options()).await?;
    let answer = client
        .regenerate(RegenerateRequest {
            world_id: args.world.clone(),
            new_world_id: args.id.unwrap_or_default(),
        })
        .await
        .map_err(|s| anyhow!("cannot regenerate {:?}: {}", args.world, describe(&s)))?
        .into_inner();
    let info = answer.world.unwrap_or_default();
    println!("{}", info.world_id);
    if let Some(line) = answer.events.iter().rev().find(|e| e.turn > 0) {
        eprintln!(
            "asked again in {} (event {}), {:?} left as it was:\n  {}: {}",
            info.world_id, line.seq, args.world, line.speaker_name, line.text
        );
    }
    Ok(())
}

/// "scene 2 of 4", "round 3 of 6", "finished", "FAILED: why".
pub(super) fn progress(info: &WorldInfo) -> String {
    if info.status() == WorldStatus::Finished {
        return "finished".into();
    }
    if info.status() == WorldStatus::Failed {
        return format!("FAILED: {}", info.failure);
    }
    let unit = if info.open { "round" } else { "scene" };
    let running = if info.status() == WorldStatus::Running {
        ", running"
    } else {
        ""
    };
    format!(
        "{unit} {} of {}{running}",
        info.current_scene, info.total_scenes
    )
}
