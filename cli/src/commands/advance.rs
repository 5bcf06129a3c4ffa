//! `dramatis advance`: runs a world on a running world service for some turns, to the
//! end of the scene, or to the end of the story, printing one summary line per scene as
//! each scene ends.

use crate::options::ServerArg;
use anyhow::{Context as _, anyhow};
use clap::Args;
use dramatis_proto::v1::{
    Event, EventKind, GetWorldRequest, WorldInfo, WorldStatus, advance_request,
};

use super::worlds::progress;
use dramatis_runtime::client::{describe, world_client};

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("until").args(["turns", "scene", "to_end"])))]
pub struct AdvanceArgs {
    /// World id.
    pub world: String,
    /// Run this many turns (scene markers and narration are not turns).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub turns: Option<u32>,
    /// Run to the end of the current scene (the default).
    #[arg(long)]
    pub scene: bool,
    /// Run to the end of the story.
    #[arg(long)]
    pub to_end: bool,
    #[command(flatten)]
    pub server: ServerArg,
}

/// How far to go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Until {
    Turns(u32),
    Scene,
    End,
}

impl From<&AdvanceArgs> for Until {
    fn from(args: &AdvanceArgs) -> Self {
        match (args.turns, args.to_end) {
            (Some(turns), _) => Self::Turns(turns),
            (None, true) => Self::End,
            (None, false) => Self::Scene,
        }
    }
}

pub async fn advance(args: AdvanceArgs) -> anyhow::Result<()> {
    let until = Until::from(&args);
    let mut client = world_client(&args.server.client_options()).await?;
    let mut info = client
        .get_world(GetWorldRequest {
            world_id: args.world.clone(),
        })
        .await
        .map_err(|s| anyhow!("cannot find the world: {}", describe(&s)))?
        .into_inner();
    if info.status() == WorldStatus::Finished {
        eprintln!("{} has already finished.", info.title);
        return Ok(());
    }
    let mut tally = SceneTally::new(&info);
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let mut turns_run = 0;
    loop {
        let step = match until {
            // One turn a call, so a scene's summary prints as soon as it ends.
            Until::Turns(_) => advance_request::Until::Turns(1),
            Until::Scene | Until::End => advance_request::Until::SceneEnd(true),
        };
        spinner.set_message(tally.running_message(&info));
        let advanced = dramatis_runtime::client::advance(&mut client, &info.world_id, step)
            .await
            .map_err(|e| anyhow!("the story stopped: {}", describe(&e.status)))?;
        info = advanced.world.context("advance returned no world state")?;
        for event in &advanced.events {
            if let Some(line) = tally.event(event, &info) {
                spinner.suspend(|| println!("{line}"));
            }
        }
        turns_run += 1;
        let done = info.status() == WorldStatus::Finished
            || match until {
                Until::Turns(turns) => turns_run >= turns,
                Until::Scene => true,
                Until::End => false,
            };
        if done {
            break;
        }
    }
    spinner.finish_and_clear();
    let unfinished = tally.unfinished(&info);
    if let Some(line) = &unfinished {
        println!("{line}");
    }
    eprintln!(
        "{}: {}",
        info.world_id,
        position(&info, unfinished.is_some())
    );
    Ok(())
}

/// "finished after 14 turns", "next: scene 3 of 4", "next: scene 2 of 4 (2 turns in)".
fn position(info: &WorldInfo, mid_scene: bool) -> String {
    if info.status() == WorldStatus::Finished {
        return format!("finished after {} turns", info.total_turns);
    }
    let within = if mid_scene {
        format!(" ({} turns in)", info.scene_turn)
    } else {
        String::new()
    };
    format!("next: {}{within}", progress(info))
}

/// A scene marker's text without its "Scene 2: " or "Round 3: " lead.
fn without_marker_number(text: &str) -> &str {
    match text.split_once(": ") {
        Some((lead, rest))
            if lead.split_once(' ').is_some_and(|(word, number)| {
                matches!(word, "Scene" | "Round") && number.chars().all(|c| c.is_ascii_digit())
            }) =>
        {
            rest
        }
        _ => text,
    }
}

/// What one scene produced, from its start marker (or from where this command joined
/// it) to its end marker.
#[derive(Debug, Default)]
struct SceneTally {
    open_story: bool,
    total_scenes: u32,
    /// Scene index, its title (the start marker's text) and place id; `None` while no
    /// event of the scene has been seen.
    scene: Option<(u32, String, String)>,
    /// Joined after the scene's start.
    continued: bool,
    /// Speakers by display name in order of first line, with their line counts.
    speakers: Vec<(String, u32)>,
    lines: u32,
    moves: u32,
    calls: u32,
    tokens: u64,
    first_ms: i64,
    last_ms: i64,
}

impl SceneTally {
    fn new(info: &WorldInfo) -> Self {
        Self {
            open_story: info.open,
            total_scenes: info.total_scenes,
            ..Self::default()
        }
    }

    fn unit(&self) -> &'static str {
        if self.open_story { "round" } else { "scene" }
    }

    fn running_message(&self, info: &WorldInfo) -> String {
        format!(
            "{} {} of {} running…",
            self.unit(),
            info.current_scene.max(1),
            info.total_scenes
        )
    }

    /// Counts `event`; returns the scene's summary line when the event ends it.
    fn event(&mut self, event: &Event, info: &WorldInfo) -> Option<String> {
        let kind = event.kind();
        if kind == EventKind::SceneEnd && self.scene.is_none() {
            // A round with no scene (everyone on the road).
            return Some(format!(
                "{} {}/{} · {}",
                self.unit(),
                event.scene_index,
                self.total_scenes,
                event.text
            ));
        }
        if kind == EventKind::SceneStart || self.scene.is_none() {
            *self = Self::new(info);
            self.continued = kind != EventKind::SceneStart;
            let title = if kind == EventKind::SceneStart {
                without_marker_number(&event.text).to_owned()
            } else {
                String::new()
            };
            self.scene = Some((event.scene_index, title, event.location.clone()));
            self.first_ms = event.timestamp_ms;
        }
        self.last_ms = event.timestamp_ms;
        if let Some(usage) = &event.usage {
            self.calls += usage.llm_calls;
            self.tokens += u64::from(usage.prompt_tokens) + u64::from(usage.completion_tokens);
        }
        match kind {
            EventKind::Speech | EventKind::Action => {
                self.lines += 1;
                let name = if event.speaker_name.is_empty() {
                    &event.speaker
                } else {
                    &event.speaker_name
                };
                match self.speakers.iter_mut().find(|(n, _)| n == name) {
                    Some((_, count)) => *count += 1,
                    None => self.speakers.push((name.clone(), 1)),
                }
                None
            }
            EventKind::Movement if !event.speaker.is_empty() => {
                self.moves += 1;
                None
            }
            EventKind::SceneEnd => {
                let line = self.summary(info, Some(&event.text));
                self.scene = None;
                Some(line)
            }
            _ => None,
        }
    }

    /// The summary of a scene this command left before its end, if it saw any of it.
    fn unfinished(&self, info: &WorldInfo) -> Option<String> {
        self.scene.as_ref()?;
        Some(self.summary(info, None))
    }

    fn summary(&self, info: &WorldInfo, ended: Option<&str>) -> String {
        let (index, title, place_id) = self.scene.clone().unwrap_or_default();
        let place = info
            .locations
            .iter()
            .find(|l| l.id == place_id)
            .map_or(place_id.as_str(), |l| l.name.as_str());
        let mut head = format!("{} {index}/{}", self.unit(), self.total_scenes);
        if !title.is_empty() {
            head.push_str(&format!(" — {title}"));
        }
        if !place.is_empty() && !title.contains(place) {
            head.push_str(&format!(" at {place}"));
        }
        if self.continued {
            head.push_str(" (continued)");
        }
        let who = if self.speakers.is_empty() {
            String::new()
        } else {
            let names: Vec<String> = self
                .speakers
                .iter()
                .map(|(name, count)| format!("{name} {count}"))
                .collect();
            format!(" ({})", names.join(", "))
        };
        let moves = match self.moves {
            0 => String::new(),
            1 => ", 1 move".into(),
            n => format!(", {n} moves"),
        };
        let seconds = (self.last_ms - self.first_ms).max(0) as f64 / 1000.0;
        let end = ended.map_or_else(|| "still going".to_owned(), str::to_owned);
        format!(
            "{head} · {} line{}{who}{moves} · {} LLM calls, {} tokens · {seconds:.1} s · {end}",
            self.lines,
            if self.lines == 1 { "" } else { "s" },
            self.calls,
            self.tokens,
        )
    }
}
