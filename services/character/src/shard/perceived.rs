//! An event as the character perceived it: what the shard keeps of every event that
//! reached the character (scene markers included), and its renderings as a first-person
//! line and as a line of the storyline the memory modules share.

use dramatis_memory::modules::{Line, LineKind};
use dramatis_proto::v1::{Event, EventKind};
use serde::{Deserialize, Serialize};

use super::display;

/// What kind of perceived event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PerceivedKind {
    Speech,
    Action,
    Movement,
    Narration,
    SceneStart,
    SceneEnd,
}

/// An event as the character perceived it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Perceived {
    pub seq: u64,
    pub scene_id: String,
    pub kind: PerceivedKind,
    pub speaker: String,
    pub speaker_name: String,
    pub target: String,
    pub target_name: String,
    pub text: String,
    /// The character's own thought (never anyone else's).
    pub thought: String,
    /// Who perceived it that the character could see (ids or the handles the world
    /// gave it for strangers).
    pub perceivers: Vec<String>,
    /// Their names as the character knew them then (same order; empty in shards
    /// written before names were rendered per character).
    #[serde(default)]
    pub perceiver_names: Vec<String>,
}

impl Perceived {
    pub(super) fn from_event(event: &Event) -> Option<Self> {
        let kind = match event.kind() {
            EventKind::Speech => PerceivedKind::Speech,
            EventKind::Action => PerceivedKind::Action,
            EventKind::Movement => PerceivedKind::Movement,
            EventKind::Narration => PerceivedKind::Narration,
            EventKind::SceneStart => PerceivedKind::SceneStart,
            EventKind::SceneEnd => PerceivedKind::SceneEnd,
            EventKind::Unspecified => return None,
        };
        Some(Self {
            seq: event.seq,
            scene_id: event.scene_id.clone(),
            kind,
            speaker: event.speaker.clone(),
            speaker_name: display(&event.speaker_name, &event.speaker).to_owned(),
            target: event.target.clone(),
            target_name: display(&event.target_name, &event.target).to_owned(),
            text: event.text.clone(),
            thought: event.thought.clone(),
            perceivers: event.perceivers.clone(),
            perceiver_names: event.perceiver_names.clone(),
        })
    }

    /// The event as a line of the character's working memory ("You" for itself).
    #[must_use]
    pub fn line(&self, me: &str) -> Option<String> {
        let who = if self.speaker == me {
            "You"
        } else {
            self.speaker_name.as_str()
        };
        let to = if self.target.is_empty() {
            String::new()
        } else if self.target == me {
            " (to you)".to_owned()
        } else {
            format!(" (to {})", self.target_name)
        };
        let line = match self.kind {
            PerceivedKind::Speech => format!("{who}{to}: \"{}\"", self.text),
            PerceivedKind::Action | PerceivedKind::Movement => format!("{who}{to}: {}", self.text),
            PerceivedKind::Narration => self.text.clone(),
            PerceivedKind::SceneStart => format!("-- {} --", self.text),
            PerceivedKind::SceneEnd => return None,
        };
        if self.speaker == me && !self.thought.is_empty() {
            Some(format!("{line} (you thought: {})", self.thought))
        } else {
            Some(line)
        }
    }

    /// Id of this event in the audit.
    #[must_use]
    pub fn memory_id(&self) -> String {
        format!("event:{}", self.seq)
    }

    /// The event as a line of the storyline the memory modules share (scene markers
    /// are not lines). Its position is set when the modules take it.
    #[must_use]
    pub fn storyline_line(&self) -> Option<Line> {
        let kind = match self.kind {
            PerceivedKind::Speech => LineKind::Speech,
            PerceivedKind::Action => LineKind::Action,
            PerceivedKind::Movement => LineKind::Movement,
            PerceivedKind::Narration => LineKind::Narration,
            PerceivedKind::SceneStart | PerceivedKind::SceneEnd => return None,
        };
        Some(Line {
            position: 0,
            scene_id: self.scene_id.clone(),
            kind,
            speaker: self.speaker.clone(),
            speaker_name: self.speaker_name.clone(),
            target: self.target.clone(),
            target_name: self.target_name.clone(),
            text: self.text.clone(),
            location: String::new(),
        })
    }
}
