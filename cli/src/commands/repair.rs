//! `dramatis repair`: a damaged event log made whole up to its damage.

use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

#[derive(Debug, Args)]
pub struct RepairArgs {
    /// The data directory of the service whose log is damaged (`serve --data-dir`).
    /// The service must be stopped: repair takes the directory's lock.
    #[arg(long, env = "DRAMATIS_DATA_DIR", default_value = "dramatis-data")]
    pub data_dir: PathBuf,
}

/// Repairs `events.redb` under the data directory and prints, per world, what was kept.
pub fn repair(args: &RepairArgs) -> anyhow::Result<()> {
    let path = args.data_dir.join("events.redb");
    let _lock = crate::locks::hold_data_dir(&args.data_dir)?;
    let repaired =
        dramatis_world::log::repair(&path).with_context(|| format!("repair {}", path.display()))?;
    let Some(aside) = &repaired.aside else {
        println!(
            "{} passed its check: nothing to repair ({} worlds)",
            path.display(),
            repaired.worlds.len()
        );
        return Ok(());
    };
    println!("the damaged log is set aside as {}", aside.display());
    let mut cut = 0;
    for world in &repaired.worlds {
        match &world.lost {
            None => println!("  {}: whole, events 1–{}", world.world_id, world.kept),
            Some(why) => {
                cut += 1;
                let kept = match world.kept {
                    0 => "kept no event".to_owned(),
                    n => format!("kept events 1–{n}"),
                };
                println!(
                    "  {}: cut short, {kept}; lost the rest: {why}",
                    world.world_id
                );
            }
        }
    }
    println!(
        "{} worlds in the new log at {}: {} whole, {cut} cut short (the service shows \
         those FAILED)",
        repaired.worlds.len(),
        path.display(),
        repaired.worlds.len() - cut
    );
    Ok(())
}
