//! An event as the character perceived it: what the shard keeps of every event that
//! reached the character (scene markers included), and its renderings as a first-person
//! line and as a line of the storyline the memory modules share.

use serde::{Deserialize, Serialize};

use crate::modules::{Line, LineKind};

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

/// An event as the character perceived it (the agent makes it from the world's event,
/// names as the character knew them).
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
    /// How many more perceived it, in a crowd, than `perceivers` names (only counted).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub others: u32,
    /// A scene's start: what the place looks like (empty in shards written before the
    /// world sent it).
    #[serde(default)]
    pub place_description: String,
    /// On the character's own line: the state its turn left (mood, goal, feeling), as
    /// the world logged it with the line. What the character felt and wanted at that
    /// moment, so that it can be asked as it stood then. Empty on others' events (and in
    /// shards written before it was kept).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub own_state: String,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl Perceived {
    /// The event as a line of the character's working memory ("You" for itself).
    #[must_use]
    pub fn line(&self, me: &str) -> Option<String> {
        self.phrase(me).map(|p| p.text())
    }

    /// A scene's start as the one there saw it: the place's name and how it looks.
    /// `None` for any other event, or a start that carries no description.
    #[must_use]
    pub fn sight(&self) -> Option<String> {
        (self.kind == PerceivedKind::SceneStart && !self.place_description.trim().is_empty()).then(
            || {
                format!(
                    "{}. {}",
                    self.text.trim_end_matches('.'),
                    self.place_description.trim()
                )
            },
        )
    }

    /// The line of [`Self::line`] in its parts: who, as the character knows them, and
    /// the words everyone who perceived the event heard or saw alike.
    #[must_use]
    pub fn phrase(&self, me: &str) -> Option<Phrase> {
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
        let frame = format!("{who}{to}");
        let mut phrase = match self.kind {
            PerceivedKind::Speech => Phrase::new(frame, Joint::Quoted, &self.text),
            PerceivedKind::Action | PerceivedKind::Movement => {
                Phrase::new(frame, Joint::Colon, &self.text)
            }
            PerceivedKind::Narration => Phrase::alone(&self.text),
            PerceivedKind::SceneStart => Phrase::alone(&format!("-- {} --", self.text)),
            PerceivedKind::SceneEnd => return None,
        };
        if self.speaker == me && !self.thought.is_empty() {
            phrase.after = format!("(you thought: {})", self.thought);
        }
        Some(phrase)
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

/// How a phrase's frame and words join.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Joint {
    /// `frame: "words"`
    Quoted,
    /// `frame: words`
    Colon,
    /// `frame words`
    Space,
}

/// A sentence about a perceived event in two parts: its `frame`, who acted as the
/// reader knows them, which differs from character to character; and its `words`, what
/// was said or done, the same for everyone who perceived it. Prompts read its
/// [`text`](Self::text); memory embeds its [`pieces`](Self::pieces), so a line's words
/// are embedded once per agent process however many of its characters perceived them
/// (the agent composes a line's vector from its pieces').
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Phrase {
    /// Empty for words that stand alone (narration).
    pub frame: String,
    pub joint: Joint,
    pub words: String,
    /// A remark after the words (the character's own thought), or empty.
    pub after: String,
}

impl Phrase {
    #[must_use]
    pub fn new(frame: impl Into<String>, joint: Joint, words: &str) -> Self {
        Self {
            frame: frame.into(),
            joint,
            words: words.to_owned(),
            after: String::new(),
        }
    }

    /// Words with no frame.
    #[must_use]
    pub fn alone(words: &str) -> Self {
        Self::new(String::new(), Joint::Space, words)
    }

    /// The sentence as prompts and memories read it.
    #[must_use]
    pub fn text(&self) -> String {
        let mut text = match (self.frame.is_empty(), self.joint) {
            (true, _) => self.words.clone(),
            (false, Joint::Quoted) => format!("{}: \"{}\"", self.frame, self.words),
            (false, Joint::Colon) => format!("{}: {}", self.frame, self.words),
            (false, Joint::Space) => format!("{} {}", self.frame, self.words),
        };
        if !self.after.is_empty() {
            text.push(' ');
            text.push_str(&self.after);
        }
        text
    }

    /// What is embedded: the frame (with its colon), the words, the remark, each on its
    /// own; empty parts left out.
    #[must_use]
    pub fn pieces(&self) -> Vec<String> {
        let frame = match self.joint {
            Joint::Quoted | Joint::Colon if !self.frame.is_empty() => format!("{}:", self.frame),
            _ => self.frame.clone(),
        };
        [frame, self.words.clone(), self.after.clone()]
            .into_iter()
            .filter(|p| !p.trim().is_empty())
            .collect()
    }
}
