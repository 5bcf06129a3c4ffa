//! Who knows whom by name, and everything a character is sent, rendered with the names
//! it knows. Identity is knowledge: a character knows another by name only when the
//! scenario says so (`knows`, at the start or from a scene on) or after it perceived a
//! line that named that person while the person was there: someone introducing
//! themself, or being named aloud. Until then the other is known by what can be seen
//! of them (`known_as`), and the other's id reaches the character's agent only as an
//! opaque handle, stable for the life of the world, so the agent can tell people apart
//! and address them without learning who they are.
//!
//! The log keeps canonical ids and names; [`Perspective`] renders one character's copy.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::Hasher;

use dramatis_proto::v1::{Event, EventKind, SceneFrame, TokenChunk};

use crate::attention::{Attention, Cast, Listed};
use dramatis_scenario::{Scenario, Scene};

/// The names each character learned during the story, with the event that taught
/// each. Derived from events only, so replaying the log rebuilds it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Acquaintances {
    /// (who, whom) -> (seq, the name heard), in the order learned.
    learned: BTreeMap<(String, String), Vec<(u64, String)>>,
    /// (who, whom): `who` perceived a spoken line that named `whom`, there or not. It
    /// knows the name as a word it heard, and may say it.
    heard: BTreeSet<(String, String)>,
}

impl Acquaintances {
    /// Folds one event in. A scene's start teaches the scene's `knows`; a line spoken
    /// aloud teaches everyone who heard it the name of each person present that it
    /// names (a speaker naming themself included).
    pub fn learn(&mut self, scenario: &Scenario, scene: Option<&Scene>, event: &Event) {
        match event.kind() {
            EventKind::SceneStart => {
                for (who, whom) in scene.map(|s| &s.knows).into_iter().flatten() {
                    for other in whom {
                        let name = scenario.name_of(other).to_owned();
                        self.teach(who, other, event.seq, name);
                    }
                }
            }
            EventKind::Speech => {
                for character in &scenario.characters {
                    if names_any(&event.text, &character.name_forms()) {
                        for hearer in &event.perceivers {
                            self.heard.insert((hearer.clone(), character.id.clone()));
                        }
                    }
                }
                for named in &event.perceivers {
                    let Some(character) = scenario.character(named) else {
                        continue;
                    };
                    let Some(form) = character
                        .name_forms()
                        .into_iter()
                        .find(|form| find_word(&event.text, form, 0).is_some())
                    else {
                        continue;
                    };
                    for hearer in event.perceivers.iter().filter(|h| *h != named) {
                        self.teach(hearer, named, event.seq, form.to_owned());
                    }
                }
            }
            _ => {}
        }
    }

    /// `who` learns to call `whom` `name` at `seq`, unless it already knows a name as
    /// full (a later "Holmes" does not replace "Sherlock Holmes").
    fn teach(&mut self, who: &str, whom: &str, seq: u64, name: String) {
        let names = self
            .learned
            .entry((who.to_owned(), whom.to_owned()))
            .or_default();
        if names
            .last()
            .is_none_or(|(_, known)| known.len() < name.len())
        {
            names.push((seq, name));
        }
    }

    /// Everyone `who` has learned a name for, by now.
    #[must_use]
    pub fn known_to(&self, who: &str) -> std::collections::BTreeSet<&str> {
        self.learned
            .range((who.to_owned(), String::new())..)
            .take_while(|((by, _), _)| by == who)
            .map(|((_, whom), _)| whom.as_str())
            .collect()
    }

    /// The name `who` knew `whom` by at event `seq` (learned at or before it).
    fn learned(&self, who: &str, whom: &str, seq: u64) -> Option<&str> {
        self.learned
            .get(&(who.to_owned(), whom.to_owned()))?
            .iter()
            .rev()
            .find(|(at, _)| *at <= seq)
            .map(|(_, name)| name.as_str())
    }
}

/// Prefix of the handle a character's agent gets for someone it does not know by name
/// from the start.
const HANDLE_PREFIX: &str = "person-";

/// One character's view of the world's people.
#[derive(Debug, Clone, Copy)]
pub struct Perspective<'a> {
    pub scenario: &'a Scenario,
    pub world_id: &'a str,
    pub known: &'a Acquaintances,
    /// Who each character lately dealt with: what a crowd is ranked by.
    pub attention: &'a Attention,
    /// The character whose view this is.
    pub me: &'a str,
}

impl Perspective<'_> {
    /// Whether `me` knew `other`'s name at event `seq` (`u64::MAX`: now).
    #[must_use]
    pub fn knows(&self, other: &str, seq: u64) -> bool {
        other == self.me
            || self.knows_from_start(other)
            || self.known.learned(self.me, other, seq).is_some()
    }

    /// At most the scenario's attention of `people` (`me` left out), the most salient
    /// to `me` first with `pinned` before all, and how many more there are.
    #[must_use]
    pub fn attend<'p>(&self, people: &[&'p str], pinned: &[&str]) -> Listed<'p> {
        let limit = self.scenario.attention_limit();
        let learned = if people.len() > limit {
            self.known.known_to(self.me)
        } else {
            std::collections::BTreeSet::new()
        };
        let from_start = self.scenario.character(self.me).map(|c| &c.knows);
        let knows =
            |other: &str| learned.contains(other) || from_start.is_some_and(|k| k.contains(other));
        let position = |id: &str| self.scenario.position(id);
        let cast = Cast {
            position: &position,
            knows: &knows,
        };
        self.attention.rank(self.me, people, pinned, &cast, limit)
    }

    fn knows_from_start(&self, other: &str) -> bool {
        self.scenario
            .character(self.me)
            .is_some_and(|c| c.knows.contains(other))
    }

    /// Whether `me` may say `other`'s name: it knows them by it, heard it spoken, or its
    /// own starting knowledge (its facts, its profile, its memories) holds it.
    #[must_use]
    pub fn may_name(&self, other: &str) -> bool {
        if self.knows(other, u64::MAX)
            || self
                .known
                .heard
                .contains(&(self.me.to_owned(), other.to_owned()))
        {
            return true;
        }
        let (Some(me), Some(other)) = (
            self.scenario.character(self.me),
            self.scenario.character(other),
        ) else {
            return false;
        };
        let forms = other.name_forms();
        let holds = |text: &str| names_any(text, &forms);
        let own = [
            me.profile.as_str(),
            me.goal.as_str(),
            me.style.as_str(),
            me.card.as_str(),
        ];
        own.into_iter().any(holds)
            || me.memories.iter().any(|m| holds(&m.text))
            || me
                .patterns
                .iter()
                .any(|p| holds(&p.description) || p.excerpts.iter().any(|e| holds(e)))
            || self
                .scenario
                .facts
                .iter()
                .any(|f| f.known_by.contains(self.me) && holds(&f.text))
    }

    /// A line `me` speaks, with the name of anyone in the cast that it may not say
    /// (see [`Self::may_name`]) replaced by what it calls them. A model that knows the
    /// book can write a name its character never came across; Chinese names have no
    /// capitals for the agent's own guard to find, so the world holds the line to the
    /// cast it knows. Hearers would otherwise learn the name from it.
    #[must_use]
    pub fn spoken(&self, text: &str) -> String {
        let unsayable: Vec<&str> = self
            .scenario
            .characters
            .iter()
            .filter(|c| c.id != self.me && names_any(text, &c.name_forms()))
            .map(|c| c.id.as_str())
            .filter(|id| !self.may_name(id))
            .collect();
        if unsayable.is_empty() {
            return text.to_owned();
        }
        self.render(text, unsayable, u64::MAX)
    }

    /// What `me` called `other` at event `seq`: its name, the part of it heard, or
    /// what can be seen of it.
    #[must_use]
    pub fn name(&self, other: &str, seq: u64) -> String {
        let Some(character) = self.scenario.character(other) else {
            return other.to_owned();
        };
        if other == self.me || self.knows_from_start(other) {
            return character.name.clone();
        }
        self.known
            .learned(self.me, other, seq)
            .unwrap_or_else(|| character.appearance())
            .to_owned()
    }

    /// The id `me`'s agent uses for `other`: the id itself for itself and those it
    /// knew from the start; otherwise an opaque handle derived from the world, the
    /// viewer and the other, the same for the life of the world.
    #[must_use]
    pub fn handle(&self, other: &str) -> String {
        if other.is_empty()
            || other == self.me
            || self.knows_from_start(other)
            || self.scenario.character(other).is_none()
        {
            return other.to_owned();
        }
        let mut hasher = fnv::FnvHasher::default();
        for part in [self.world_id, self.me, other] {
            hasher.write(part.as_bytes());
            hasher.write_u8(0);
        }
        format!("{HANDLE_PREFIX}{:010x}", hasher.finish() & 0xff_ffff_ffff)
    }

    /// The character `me` means by `wanted`: a handle it was given, or (for someone it
    /// knows by name now) that name or one of its forms.
    #[must_use]
    pub fn resolve(&self, wanted: &str) -> Option<&str> {
        let wanted = wanted.trim();
        if wanted.is_empty() {
            return None;
        }
        self.scenario.characters.iter().find_map(|c| {
            let by_handle = self.handle(&c.id) == wanted;
            let by_name = self.knows(&c.id, u64::MAX)
                && std::iter::once(&c.id)
                    .chain([&c.name])
                    .chain(&c.aliases)
                    .any(|n| n.eq_ignore_ascii_case(wanted));
            (by_handle || by_name).then_some(c.id.as_str())
        })
    }

    /// `text` with every name of the people in `others` that `me` did not know at
    /// `seq` replaced by what it called them then. For the world's and actors' own
    /// descriptions (actions, narration, directions), never for words spoken aloud.
    #[must_use]
    pub fn render<'o>(
        &self,
        text: &str,
        others: impl IntoIterator<Item = &'o str>,
        seq: u64,
    ) -> String {
        let mut text = text.to_owned();
        for other in others {
            if other == self.me || self.knows_from_start(other) {
                continue;
            }
            let Some(character) = self.scenario.character(other) else {
                continue;
            };
            let called = self.name(other, seq);
            text = replace_names(&text, &character.name_forms(), &called);
        }
        text
    }

    /// The event as `me`'s agent receives it, or `None` if it did not perceive it.
    /// Only the actor keeps its thought and its state; a scene's end hides its reason;
    /// the usage is the world's bookkeeping. Others appear by handle, with the names
    /// `me` knew them by at that moment, and only those it could see: a departure is
    /// seen by those at the origin, an arrival by those at the destination, and
    /// neither side is named to the other.
    #[must_use]
    pub fn event(&self, event: &Event) -> Option<Event> {
        if !event.perceivers.iter().any(|p| p == self.me) {
            return None;
        }
        let seq = event.seq;
        let mut view = event.clone();
        if view.speaker != self.me {
            view.thought.clear();
            view.actor_state.clear();
        }
        view.usage = None;
        view.fallback = false;
        let kind = view.kind();
        if kind == EventKind::SceneEnd {
            // The end reason may name the hidden beat; perceivers only learn it ended.
            view.text = "The scene ends.".into();
        }
        let (visible, more) = self.attended(event, self.visible(event));
        view.others_perceiving = more;
        if event.director {
            // The director may name anyone: each is named as `me` knew them then.
            let everyone = self.scenario.characters.iter().map(|c| c.id.as_str());
            view.text = self.render(&view.text, everyone, seq);
        } else if matches!(
            kind,
            EventKind::Action | EventKind::Movement | EventKind::Narration
        ) {
            let named = visible.iter().copied().chain([event.target.as_str()]);
            view.text = self.render(&view.text, named, seq);
        }
        view.perceiver_names = visible.iter().map(|p| self.name(p, seq)).collect();
        view.perceivers = visible.iter().map(|p| self.handle(p)).collect();
        view.origin_perceivers.clear();
        view.speaker_name = self.name(&event.speaker, seq);
        view.speaker = self.handle(&event.speaker);
        if !event.target.is_empty() {
            view.target_name = self.name(&event.target, seq);
            view.target = self.handle(&event.target);
        }
        Some(view)
    }

    /// Of `visible` (the perceivers of `event` that `me` could see), those a copy
    /// names: `me`, the speaker, the target and the most salient others up to the
    /// attention limit, in their own order; and how many more there were.
    fn attended<'e>(&self, event: &Event, visible: Vec<&'e str>) -> (Vec<&'e str>, u32) {
        let limit = self.scenario.attention_limit();
        if visible.len() <= limit + 1 {
            return (visible, 0);
        }
        let pinned: Vec<&str> = [event.speaker.as_str(), event.target.as_str()]
            .into_iter()
            .filter(|p| !p.is_empty() && *p != self.me)
            .collect();
        let listed = self.attend(&visible, &pinned);
        let named: std::collections::HashSet<&str> = listed.named.iter().copied().collect();
        let kept = visible
            .into_iter()
            .filter(|p| *p == self.me || named.contains(p))
            .collect();
        (kept, dramatis_base::saturating_u32(listed.more))
    }

    /// The perceivers of `event` that `me` could see.
    fn visible<'e>(&self, event: &'e Event) -> Vec<&'e str> {
        let origin = &event.origin_perceivers;
        let all = event.perceivers.iter().map(String::as_str);
        if origin.is_empty() || event.speaker == self.me {
            return all.collect();
        }
        let left_from_here = origin.iter().any(|p| p == self.me);
        all.filter(|p| *p == event.speaker || origin.iter().any(|o| o == p) == left_from_here)
            .collect()
    }

    /// The words of a line as `me` hears them being spoken (`None` if it cannot).
    #[must_use]
    pub fn token(&self, token: &TokenChunk) -> Option<TokenChunk> {
        if !token.perceivers.iter().any(|p| p == self.me) {
            return None;
        }
        Some(TokenChunk {
            seq: token.seq,
            speaker: self.handle(&token.speaker),
            speaker_name: self.name(&token.speaker, u64::MAX),
            text: token.text.clone(),
            perceivers: token.perceivers.iter().map(|p| self.handle(p)).collect(),
        })
    }

    /// A frame built with canonical ids and texts, as `me` sees it now.
    #[must_use]
    pub fn frame(&self, mut frame: SceneFrame) -> SceneFrame {
        let everyone = self.scenario.characters.iter().map(|c| c.id.as_str());
        frame.direction = self.render(&frame.direction, everyone.clone(), u64::MAX);
        frame.location_description = self.render(&frame.location_description, everyone, u64::MAX);
        let ids: Vec<&str> = frame.present.iter().map(|p| p.id.as_str()).collect();
        let listed = self.attend(&ids, &[]);
        let named: Vec<String> = listed.named.iter().map(|id| (*id).to_owned()).collect();
        frame.others_present = dramatis_base::saturating_u32(listed.more);
        frame.present = named
            .iter()
            .map(|id| dramatis_proto::v1::PresentCharacter {
                name: self.name(id, u64::MAX),
                id: self.handle(id),
            })
            .collect();
        frame
    }
}

/// Whether `text` holds one of `forms` as a whole word.
fn names_any(text: &str, forms: &[&str]) -> bool {
    forms.iter().any(|f| find_word(text, f, 0).is_some())
}

/// The byte offset of `word` in `text` at or after `from`, as a whole word (not part
/// of a longer one).
fn find_word(text: &str, word: &str, from: usize) -> Option<usize> {
    if word.is_empty() {
        return None;
    }
    let mut start = from;
    while let Some(found) = text.get(start..)?.find(word) {
        let at = start + found;
        let end = at + word.len();
        if dramatis_base::whole_word_at(text, at, end) {
            return Some(at);
        }
        start = at + text[at..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// `text` with every whole-word occurrence of one of `forms` (the longest where several
/// start at one place) replaced by `with`, capitalised where it begins a sentence, in
/// one pass: an occurrence that already reads `with` is kept, and nothing put in is
/// searched again (so "Holmes" never turns the "Sherlock Holmes" a character knows
/// into "Sherlock Sherlock Holmes").
fn replace_names(text: &str, forms: &[&str], with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    let next = |from: usize| {
        forms
            .iter()
            .filter_map(|form| find_word(text, form, from).map(|at| (at, form.len())))
            .min_by_key(|&(at, len)| (at, std::cmp::Reverse(len)))
    };
    while let Some((at, len)) = next(rest) {
        out.push_str(&text[rest..at]);
        if &text[at..at + len] == with {
            out.push_str(with);
            rest = at + len;
            continue;
        }
        let opens_sentence = text[..at]
            .trim_end()
            .chars()
            .next_back()
            .is_none_or(|c| matches!(c, '.' | '!' | '?' | '"' | ':'));
        if opens_sentence {
            let mut chars = with.chars();
            if let Some(first) = chars.next() {
                out.extend(first.to_uppercase());
                out.push_str(chars.as_str());
            }
        } else {
            out.push_str(with);
        }
        rest = at + len;
    }
    out.push_str(&text[rest..]);
    out
}

#[cfg(test)]
mod tests;
