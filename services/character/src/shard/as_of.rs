//! The character as it stood at an earlier moment: a scratch copy of the shard holding
//! only what the character held once it had perceived every event up to a seq, for an
//! interview "as of" then. Nothing is replayed and nothing is stored for it: what the
//! shard already keeps says when each item arrived.
//!
//! - The perceived events are those up to the seq (they carry their seqs); before the
//!   first, none: the character holds what its profile gave it.
//! - Scenes close as [`Shard::perceive`] closes them: at a perceived scene end, or when
//!   the next scene's first event arrives. A scene open at the seq is still the scene
//!   under way, its lines not yet written to long-term memory.
//! - A scene memory was written when its scene closed: it is held if its scene had
//!   closed by then. The profile's starting memories always are.
//! - A fact the write path made from event `e` (`fact:e{e}`, `fact:e{e}:{line}`) was
//!   written when that event's scene closed, or, for the place a scene start showed, on
//!   arrival. The profile's facts are held from the start. A fact of any other origin
//!   is left out: a miss costs the answer, never shows a later fact early.
//! - An emotion transition entered the record at its scene's close.
//! - The mood and goal are those the character's last own line up to the seq left
//!   (the world logs them with the line); before any, the profile's goal.
//! - Names are those of the perceived events up to the seq: someone met later is shown
//!   as the character saw them then.
//! - The other memory modules (DualMem, MOOM, BOOKMARKS) keep no history of when their
//!   items arrived, so the copy starts them empty: they cannot show a later moment.

use std::collections::{BTreeMap, BTreeSet};

use super::scenes::TurnState;
use super::*;

impl Shard {
    /// A scratch copy of the shard as it stood once the character had perceived every
    /// event up to `seq` ([`Shard::scratch`] at or past its last event). Before its first
    /// perceived event, the character holds its profile only: what it brought into the
    /// story. (Whether it was in the story at all then is the world's to say: a newcomer
    /// is refused there for a moment before it joined.)
    #[must_use]
    pub fn as_of(&self, seq: u64) -> Self {
        if seq >= self.state.last_seq {
            return self.scratch();
        }
        let me = &self.profile.id;
        let perceived: Vec<Perceived> = self
            .state
            .perceived
            .iter()
            .take_while(|p| p.seq <= seq)
            .cloned()
            .collect();
        let unwritten = unwritten_of(&perceived);
        // Every event up to here had been written to long-term memory.
        let written_to = unwritten
            .checked_sub(1)
            .map_or(0, |last| perceived[last].seq);
        let memory = self.layers_then(&perceived, unwritten, written_to);
        let own = perceived
            .iter()
            .rev()
            .find(|p| p.speaker == *me && !p.own_state.is_empty())
            .and_then(|p| serde_json::from_str::<TurnState>(&p.own_state).ok());
        let (mood, goal) = match own {
            Some(turn) => (turn.mood, turn.goal),
            None => (Mood::default(), self.profile.goal.clone()),
        };
        let moments = self
            .state
            .moments
            .iter()
            .filter(|m| m.seq > written_to && m.seq <= seq)
            .cloned()
            .collect();
        let mut modules = Modules::default();
        modules.use_set(self.state.module_set, me, &self.persona());
        let mut then = Self {
            profile: self.profile.clone(),
            state: State {
                format: self.state.format,
                memory,
                names: names_of(&perceived),
                perceived,
                unwritten,
                moments,
                pending: None,
                mood,
                last_seq: seq,
                audit: Vec::new(),
                goal,
                module_set: self.state.module_set,
                modules,
            },
            store: None,
            saved: persist::Saved::default(),
            vocabulary: std::sync::Arc::default(),
        };
        then.rebuild_vocabulary();
        then
    }

    /// ReverieMem's layers as they stood with `perceived` stored, the scene under way
    /// from `unwritten` on, and every event up to `written_to` written.
    fn layers_then(
        &self,
        perceived: &[Perceived],
        unwritten: usize,
        written_to: u64,
    ) -> ReverieLayers {
        let closed: BTreeSet<&str> = perceived[..unwritten]
            .iter()
            .map(|p| p.scene_id.as_str())
            .collect();
        let starts: BTreeSet<u64> = perceived
            .iter()
            .filter(|p| p.kind == PerceivedKind::SceneStart)
            .map(|p| p.seq)
            .collect();
        let layers = &self.state.memory;
        let profile_facts: BTreeSet<String> = self
            .profile
            .knowledge
            .iter()
            .map(|f| format!("fact:{}", f.id))
            .collect();
        let mut memory = ReverieLayers::new(self.profile.id.clone());
        memory.episodic = layers
            .episodic
            .retained(|_, m| m.scene_id.is_empty() || closed.contains(m.scene_id.as_str()));
        memory.semantic = layers.semantic.retained(|_, fact| {
            if profile_facts.contains(&fact.id) {
                return true;
            }
            match written_from(&fact.id) {
                Some(e) if e <= written_to => true,
                // The place a scene's start showed, held from that start.
                Some(e) => starts.contains(&e),
                _ => false,
            }
        });
        memory.personality = layers.personality.retained(|t| t.seq <= written_to);
        memory
    }
}

/// Where the scene under way begins in `perceived`, as [`Shard::perceive`] would have
/// left it having stored exactly these events.
fn unwritten_of(perceived: &[Perceived]) -> usize {
    let mut unwritten = 0;
    for (i, p) in perceived.iter().enumerate() {
        if unwritten < i && perceived[i - 1].scene_id != p.scene_id {
            unwritten = i;
        }
        if p.kind == PerceivedKind::SceneEnd {
            unwritten = i + 1;
        }
    }
    unwritten
}

/// The event a fact of the write path was made from (`fact:e{seq}` or
/// `fact:e{seq}:{line}`).
fn written_from(id: &str) -> Option<u64> {
    let rest = id.strip_prefix("fact:e")?;
    let digits = rest.split_once(':').map_or(rest, |(seq, _)| seq);
    digits.parse().ok()
}

/// The display names `perceived` gave, by id, as [`Shard::perceive`] notes them.
fn names_of(perceived: &[Perceived]) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for p in perceived {
        note_names(&mut names, p);
    }
    names
}

/// Notes the names an event shows its speaker, its target and those who perceived it by.
pub(super) fn note_names(names: &mut BTreeMap<String, String>, p: &Perceived) {
    let seen = p.perceivers.iter().zip(&p.perceiver_names);
    for (id, name) in [(&p.speaker, &p.speaker_name), (&p.target, &p.target_name)]
        .into_iter()
        .chain(seen)
    {
        if !id.is_empty() && !name.is_empty() {
            names.insert(id.clone(), name.clone());
        }
    }
}
