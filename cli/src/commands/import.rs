//! `dramatis import bookworld`: a BookWorld preset as a scenario folder.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct BookWorldArgs {
    /// The BookWorld experiment preset (JSON). Its `./data/…` paths are read relative
    /// to the folder that holds `experiment_presets/`.
    pub preset: PathBuf,
    /// The scenario folder to write (`scenario.toml` inside); default: a folder named
    /// after the preset's source and sub-name in the current directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

pub fn bookworld(args: &BookWorldArgs) -> anyhow::Result<()> {
    let out = match &args.out {
        Some(dir) => dir.clone(),
        None => PathBuf::from(dramatis_ingest::bookworld::scenario_name(&args.preset)?),
    };
    let done = dramatis_ingest::bookworld::import(&args.preset, &out)?;
    let count =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    println!(
        "wrote {}: {}, {}, {}, {}, {}; {}",
        done.scenario.display(),
        count(done.characters, "character", "characters"),
        count(done.locations, "place", "places"),
        count(done.paths, "path", "paths"),
        count(done.facts, "relation fact", "relation facts"),
        count(done.excerpts, "excerpt", "excerpts"),
        if done.scripted {
            "a scripted scene from the preset's script"
        } else {
            "an open story (run it with `dramatis sandbox`)"
        }
    );
    for note in &done.notes {
        eprintln!("note: {note}");
    }
    Ok(())
}
