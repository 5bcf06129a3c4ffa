//! The director's hand in a story: an event an operator puts in (a narration at a
//! place, a whisper to one character, a fact revealed to some, a character brought
//! in). It is one step like a turn: taken under the state's lock, logged, published
//! and delivered by `emit` to exactly those who perceive it, each copy naming people
//! as its character knew them.
//!
//! A character new to the story joins the cast first (`admit`): kept in the world's
//! record, attached to its agent with a shard that holds its own profile and nothing
//! else, and put in the scenario the world and its watchers share, all before its
//! entrance is logged.

use std::sync::Arc;

use dramatis_proto::v1::{self as pb, Event, EventKind};

use super::{Slot, World, agents};
use crate::convert::attach_request;
use crate::error::WorldError;
use crate::log::Newcomer;
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
    /// empty: its own), seen by those there; an empty text says it arrives. With a
    /// `newcomer`, the character is new to the story and joins its cast first.
    BringIn {
        character: String,
        location: String,
        text: String,
        newcomer: Option<Box<pb::SandboxCharacter>>,
        /// The director means to bring in a character marked interview-only.
        allow_interview_only: bool,
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
            Some(Asked::BringIn(b)) => match &b.newcomer {
                None if b.character.trim().is_empty() => Err(missing("bring_in.character")),
                Some(n) if n.id.trim().is_empty() => Err(missing("bring_in.newcomer.id")),
                Some(n) if !b.character.trim().is_empty() && b.character.trim() != n.id => {
                    Err(WorldError::InvalidArgument(format!(
                        "bring_in.character {} is not the newcomer's id {}: leave it empty",
                        dramatis_runtime::quote(&b.character),
                        dramatis_runtime::quote(&n.id)
                    )))
                }
                newcomer => Ok(Self::BringIn {
                    character: newcomer
                        .as_ref()
                        .map_or_else(|| b.character.clone(), |n| n.id.clone()),
                    location: b.location.clone(),
                    text: b.text.clone(),
                    newcomer: newcomer.clone().map(Box::new),
                    allow_interview_only: b.allow_interview_only,
                }),
            },
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
        if state.finished(&self.scenario()) {
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
                newcomer,
                allow_interview_only,
                ..
            } => {
                if let Some(newcomer) = newcomer {
                    self.admit(newcomer, location).await?;
                }
                draft = self.entrance(&state, character, location, text, *allow_interview_only)?;
            }
        }
        self.emit(&mut state, draft).await
    }

    /// `newcomer` joins the cast of this open story, offstage. It is checked against
    /// the story (its problems named as `bring_in.newcomer.FIELD`) and kept in the
    /// world's record after the last logged event, so a restart brings it back and a
    /// fork from before its entrance does not hold it. Its agent then gets its shard,
    /// with its own profile and nothing else; the world and its watchers get the new
    /// cast last. Called under the state's lock; `location` is where it enters, and
    /// its home when the newcomer names none.
    async fn admit(
        &self,
        newcomer: &pb::SandboxCharacter,
        location: &str,
    ) -> Result<(), WorldError> {
        let scenario = self.scenario();
        let mut newcomer = newcomer.clone();
        newcomer.offstage = true;
        // Its home may be named as any place is (id or name); none: where it enters.
        if newcomer.location.trim().is_empty() {
            if !location.trim().is_empty() {
                newcomer.location = self.location_id(location)?;
            }
        } else if let Some(home) = scenario.find_location(&newcomer.location) {
            newcomer.location.clone_from(&home.id);
        }
        let max = self.limits.max_characters;
        if scenario.characters.len() >= max {
            return Err(WorldError::Full(format!(
                "world {} has {} characters; this service allows at most {max} (serve \
                 --max-characters)",
                dramatis_runtime::quote(&self.id),
                scenario.characters.len()
            )));
        }
        let joined = Arc::new(
            scenario
                .admit(&newcomer)
                .map_err(WorldError::InvalidArgument)?,
        );
        let id = newcomer.id.clone();
        let mut record = self
            .log
            .world(&self.id)
            .await?
            .ok_or_else(|| WorldError::WorldNotFound(self.id.clone()))?;
        let last = self.hub.next_seq() - 1;
        record.newcomers.push(Newcomer {
            after_seq: last,
            character: newcomer,
        });
        self.log.put_world(record.clone()).await?;
        let attached = async {
            let links = &self.agents.links;
            let endpoint = links.directory.endpoint_for(&self.id, &id).await?;
            let client = links.pool.port(&endpoint, &id)?;
            client
                .attach(attach_request(&self.id, &joined, &id))
                .await
                .map_err(|s| WorldError::agent(&id, &s))?;
            Ok::<_, WorldError>(agents::Link {
                endpoint,
                client,
                generation: 0,
            })
        }
        .await;
        let link = match attached {
            Ok(link) => link,
            Err(error) => {
                // Not in the story after all: the record goes back to what it was.
                record.newcomers.pop();
                if let Err(undo) = self.log.put_world(record).await {
                    tracing::warn!(world_id = %self.id, character = %id, %undo,
                        "a newcomer whose agent refused it stays in the record, offstage");
                }
                return Err(error);
            }
        };
        // It perceived nothing before it joined.
        self.agents.add(id.clone(), Slot::new(link, last));
        self.scenario.replace(joined);
        tracing::info!(world_id = %self.id, character = %id, "a newcomer joined the cast");
        Ok(())
    }

    /// The director's event of an offstage character entering at `location` (its own
    /// when empty): a movement that those there perceive, with `text` (or "… arrives
    /// at …") as they see it. Only an open story has characters offstage. A character
    /// the scenario marks interview-only is refused unless `allow_interview_only`.
    fn entrance(
        &self,
        state: &WorldState,
        character: &str,
        location: &str,
        text: &str,
        allow_interview_only: bool,
    ) -> Result<Draft, WorldError> {
        let id = self.character_id(character)?;
        let scenario = self.scenario();
        let Some(cast) = scenario.character(&id).filter(|_| scenario.open.is_some()) else {
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
                scenario.place_name(place)
            )));
        }
        if cast.interview_only && !allow_interview_only {
            return Err(WorldError::NotNow(format!(
                "{} is interview-only (the scenario marks it so): it is asked, never \
                 brought in; set allow_interview_only (`intervene --bring-in … \
                 --interview-only`) to give it the stage",
                dramatis_runtime::quote(&cast.name)
            )));
        }
        let waiting = cast.offstage || cast.interview_only;
        if state.travelling.contains_key(&id) || !waiting {
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
        let mut draft = drafts::arrival(&scenario, &id, &place);
        draft.director = true;
        if !text.is_empty() {
            text.clone_into(&mut draft.text);
        }
        Ok(draft)
    }

    /// The id of the location `needle` names (its id or name, any case).
    fn location_id(&self, needle: &str) -> Result<String, WorldError> {
        self.scenario()
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
