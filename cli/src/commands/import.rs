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

#[derive(Debug, Args)]
pub struct CardArgs {
    /// Character cards: PNG (the `chara` and `ccv3` chunks; V3 wins) or JSON. Several
    /// cards make one cast.
    #[arg(required = true)]
    pub cards: Vec<PathBuf>,
    /// World Info lorebooks (SillyTavern's, old or new fields, or a `character_book`
    /// saved alone): every entry becomes a fact, known to everyone unless
    /// `--known-by` or `--secret` says otherwise.
    #[arg(long = "lorebook", value_name = "FILE")]
    pub lorebooks: Vec<PathBuf>,
    /// `ENTRY=CHARACTER,…`: a lorebook entry (its uid, name or one of its keys) known
    /// only to these characters (ids or names). Repeat for more entries.
    #[arg(long = "known-by", value_name = "ENTRY=WHO,…", value_parser = parse_mapping)]
    pub known_by: Vec<(String, Vec<String>)>,
    /// A lorebook entry (uid, name or key) known to no one until a director reveals it
    /// (`dramatis intervene WORLD --reveal … --to …`). Repeat for more.
    #[arg(long, value_name = "ENTRY")]
    pub secret: Vec<String>,
    /// `CHARACTER=WHOM,…`: whom a character knows by name at the start (cards are
    /// strangers to each other otherwise).
    #[arg(long, value_name = "WHO=WHOM,…", value_parser = parse_mapping)]
    pub knows: Vec<(String, Vec<String>)>,
    /// Who `{{user}}` is in the cards' texts: whoever the characters speak with.
    #[arg(long, default_value = "a stranger")]
    pub user: String,
    /// The name of the one place where the cast starts.
    #[arg(long, default_value = "where the story begins")]
    pub place: String,
    /// Which greeting opens the story: 0 (the default) is the first card's first
    /// message, 1 and on the cards' other greetings in order (alternate greetings, then
    /// the next card's); the rest are kept as the story's `openings`.
    #[arg(long, default_value_t = 0)]
    pub opening: usize,
    /// The scenario folder to write (`scenario.toml` inside); default: a folder named
    /// after the cards' characters in the current directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn parse_mapping(text: &str) -> Result<(String, Vec<String>), String> {
    let (key, list) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: expected NAME=ONE,TWO"))?;
    let list: Vec<String> = list
        .split(',')
        .map(str::trim)
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect();
    if key.trim().is_empty() || list.is_empty() {
        return Err(format!("{text:?}: expected NAME=ONE,TWO"));
    }
    Ok((key.trim().to_owned(), list))
}

pub fn card(args: &CardArgs) -> anyhow::Result<()> {
    use dramatis_ingest::card::{CardImport, import};
    let request = CardImport {
        cards: args.cards.clone(),
        lorebooks: args.lorebooks.clone(),
        known_by: args.known_by.clone(),
        secret: args.secret.clone(),
        knows: args.knows.clone(),
        user: args.user.clone(),
        name: None,
        place: args.place.clone(),
        opening: args.opening,
    };
    let out = match &args.out {
        Some(dir) => dir.clone(),
        None => {
            let names: Vec<String> = args
                .cards
                .iter()
                .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .collect();
            PathBuf::from(dramatis_ingest::file::id_from(&names.join("-"), "cards"))
        }
    };
    let done = import(&request, &out)?;
    println!(
        "wrote {}: {} character(s), {} fact(s) ({} secret), {} other opening(s); an open \
         story (run it with `dramatis sandbox {}`)",
        done.scenario.display(),
        done.characters,
        done.facts,
        done.secret,
        done.openings,
        out.display()
    );
    if !done.unused.is_empty() {
        eprintln!(
            "note: lorebook fields kept in the scenario with no meaning here: {}",
            done.unused.iter().cloned().collect::<Vec<_>>().join(", ")
        );
    }
    for note in &done.notes {
        eprintln!("note: {note}");
    }
    Ok(())
}
