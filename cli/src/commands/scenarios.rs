use anyhow::bail;
use clap::Args;
use dramatis_scenario::{Scenario, ScenarioCatalog};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ScenariosArgs {
    /// Scenario files to validate (default: list the shipped scenarios).
    pub files: Vec<PathBuf>,
    /// Directory of shipped scenarios.
    #[arg(long, env = "DRAMATIS_SCENARIOS_DIR")]
    pub scenarios_dir: Option<PathBuf>,
}

pub fn scenarios(args: &ScenariosArgs) -> anyhow::Result<()> {
    if !args.files.is_empty() {
        let mut failed = 0;
        for file in &args.files {
            match Scenario::load(file) {
                Ok(s) => println!(
                    "ok  {}: {} ({} characters, {} scenes)",
                    file.display(),
                    s.title,
                    s.characters.len(),
                    s.scenes.len()
                ),
                Err(error) => {
                    failed += 1;
                    eprintln!("{error}");
                }
            }
        }
        if failed > 0 {
            bail!(
                "{failed} of {} scenario files are invalid",
                args.files.len()
            );
        }
        return Ok(());
    }
    let dir = args
        .scenarios_dir
        .clone()
        .unwrap_or_else(dramatis_runtime::models::scenarios_dir);
    let listed = ScenarioCatalog::new(&dir).list();
    if listed.is_empty() {
        bail!("no scenarios found in {}", dir.display());
    }
    let mut invalid = 0;
    for entry in listed {
        match entry {
            Ok(s) => println!(
                "{:<20} {} — {} characters, {} scenes\n{:<20} {}",
                s.name,
                s.title,
                s.characters.len(),
                s.scenes,
                "",
                s.path.display()
            ),
            Err(error) => {
                invalid += 1;
                eprintln!("invalid: {error}");
            }
        }
    }
    if invalid > 0 {
        bail!("{invalid} shipped scenarios are invalid");
    }
    Ok(())
}
