//! The director's hand in a story: an event an operator puts in (a narration at a
//! place, a whisper to one character, a fact revealed to some). It is one step like a
//! turn: taken under the state's lock, logged, published and delivered by `emit` to
//! exactly those who perceive it, each copy naming people as its character knew them.

use dramatis_proto::v1::{self as pb, Event, EventKind};

use super::World;
use crate::error::WorldError;
use dramatis_story::drafts::{self, Draft};
use dramatis_story::state::WorldState;

/// Longest text a director may put into a story, in characters.
pub const MAX_DIRECTION_CHARS: usize = 4_000;

/// What the director puts in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intervention {
    /// Narration at a location (id or name), perceived by everyone there.
    Narrate { location: String, text: String },
    /// A private event one character (id, name or alias) perceives.
    Whisper { character: String, text: String },
    /// A fact made known to these characters only, wherever they are.
    Reveal {
        characters: Vec<String>,
        text: String,
    },
    /// An offstage character (id, name or alias) enters at a location (id or name;
    /// empty: its own), seen by those there; an empty text says it arrives.
    BringIn {
        character: String,
        location: String,
        text: String,
    },
}

impl TryFrom<&pb::InterveneRequest> for Intervention {
    type Error = WorldError;

    /// The intervention a request asks for; an invalid argument for one that names
    /// none, or leaves out whom or where.
    fn try_from(request: &pb::InterveneRequest) -> Result<Self, WorldError> {
        use pb::intervene_request::Intervention as Asked;
        let missing = |field: &str| WorldError::InvalidArgument(format!("{field} is required"));
        match &request.intervention {
            Some(Asked::Narrate(n)) if n.location.trim().is_empty() => {
                Err(missing("narrate.location"))
            }
            Some(Asked::Narrate(n)) => Ok(Self::Narrate {
                location: n.location.clone(),
                text: n.text.clone(),
            }),
            Some(Asked::Whisper(w)) if w.character.trim().is_empty() => {
                Err(missing("whisper.character"))
            }
            Some(Asked::Whisper(w)) => Ok(Self::Whisper {
                character: w.character.clone(),
                text: w.text.clone(),
            }),
            Some(Asked::Reveal(r)) if r.characters.iter().all(|c| c.trim().is_empty()) => {
                Err(missing("reveal.characters"))
            }
            Some(Asked::Reveal(r)) => Ok(Self::Reveal {
                characters: r.characters.clone(),
                text: r.text.clone(),
            }),
            Some(Asked::BringIn(b)) if b.character.trim().is_empty() => {
                Err(missing("bring_in.character"))
            }
            Some(Asked::BringIn(b)) => Ok(Self::BringIn {
                character: b.character.clone(),
                location: b.location.clone(),
                text: b.text.clone(),
            }),
            None => Err(WorldError::InvalidArgument(
                "intervention is required: narrate, whisper, reveal or bring_in".into(),
            )),
        }
    }
}

impl Intervention {
    fn text(&self) -> &str {
        match self {
            Self::Narrate { text, .. }
            | Self::Whisper { text, .. }
            | Self::Reveal { text, .. }
            | Self::BringIn { text, .. } => text,
        }
    }
}

impl World {
    /// Logs and delivers the director's `intervention`; the event as logged.
    pub async fn intervene(&self, intervention: Intervention) -> Result<Event, WorldError> {
        let text = intervention.text().trim();
        // A character brought in may enter without words: it is seen to arrive.
        let wordless = matches!(intervention, Intervention::BringIn { .. });
        if text.is_empty() && !wordless {
            return Err(WorldError::InvalidArgument(
                "an intervention needs a text".into(),
            ));
        }
        let chars = text.chars().count();
        if chars > MAX_DIRECTION_CHARS {
            return Err(WorldError::InvalidArgument(format!(
                "an intervention's text holds at most {MAX_DIRECTION_CHARS} characters, \
                 not {chars}"
            )));
        }
        let mut state = self.state.lock().await;
        self.life.check_live(&self.id)?;
        if state.finished(&self.scenario) {
            return Err(WorldError::Finished(self.id.clone()));
        }
        let mut draft = Draft {
            kind: EventKind::Narration,
            text: text.to_owned(),
            director: true,
            ..Draft::default()
        };
        match &intervention {
            Intervention::Narrate { location, .. } => {
                draft.location = self.location_id(location)?;
            }
            Intervention::Whisper { character, .. } => {
                let id = self.character_id(character)?;
                draft.location = state.locations.get(&id).cloned().unwrap_or_default();
                draft.told = vec![id];
                draft.private = true;
            }
            Intervention::Reveal { characters, .. } => {
                if characters.is_empty() {
                    return Err(WorldError::InvalidArgument(
                        "a revelation names at least one character".into(),
                    ));
                }
                draft.told = characters
                    .iter()
                    .map(|c| self.character_id(c))
                    .collect::<Result<_, _>>()?;
                draft.private = true;
            }
            Intervention::BringIn {
                character,
                location,
                ..
            } => draft = self.entrance(&state, character, location, text)?,
        }
        self.emit(&mut state, draft).await
    }

    /// The director's event of an offstage character entering at `location` (its own
    /// when empty): a movement that those there perceive, with `text` (or "… arrives
    /// at …") as they see it. Only an open story has characters offstage.
    fn entrance(
        &self,
        state: &WorldState,
        character: &str,
        location: &str,
        text: &str,
    ) -> Result<Draft, WorldError> {
        let id = self.character_id(character)?;
        let Some(cast) = self
            .scenario
            .character(&id)
            .filter(|_| self.scenario.open.is_some())
        else {
            return Err(WorldError::InvalidArgument(format!(
                "world {} plays a script, whose scenes bring its characters in; only an \
                 open story's offstage characters are brought in",
                dramatis_runtime::quote(&self.id)
            )));
        };
        if let Some(place) = state.locations.get(&id) {
            return Err(WorldError::NotNow(format!(
                "{} is in the story already, at {}",
                dramatis_runtime::quote(&cast.name),
                self.scenario.place_name(place)
            )));
        }
        if state.travelling.contains_key(&id) || !cast.offstage {
            return Err(WorldError::NotNow(format!(
                "{} is in the story already, on the road",
                dramatis_runtime::quote(&cast.name)
            )));
        }
        let place = if location.trim().is_empty() {
            cast.location.clone()
        } else {
            self.location_id(location)?
        };
        let mut draft = drafts::arrival(&self.scenario, &id, &place);
        draft.director = true;
        if !text.is_empty() {
            text.clone_into(&mut draft.text);
        }
        Ok(draft)
    }

    /// The id of the location `needle` names (its id or name, any case).
    fn location_id(&self, needle: &str) -> Result<String, WorldError> {
        self.scenario
            .find_location(needle)
            .map(|l| l.id.clone())
            .ok_or_else(|| {
                WorldError::InvalidArgument(format!(
                    "world {} has no location {}",
                    dramatis_runtime::quote(&self.id),
                    dramatis_runtime::quote(needle)
                ))
            })
    }
}
