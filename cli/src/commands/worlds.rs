//! `dramatis create` and `dramatis worlds`: making and listing worlds on a running
//! world service.

use clap::Args;

use anyhow::{Context as _, anyhow};
use dramatis_proto::v1::{
    DeleteWorldRequest, ListWorldsRequest, WorldInfo, WorldStatus, create_world_request,
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
         or open {}/viewer/?world={id}",
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
        println!(
            "{}\t{}\t{}\t{} turns",
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
