//! The scene under way: perceived events stored (and foreign ones refused), the
//! character's own moments noted, a scene closed into a draft for the write path, and
//! what the write path made of it committed to the layers.

use super::*;

impl Shard {
    /// Stores perceived events. Events already seen are skipped; an event this
    /// character did not perceive, or that carries someone else's thought or state, is
    /// refused (and nothing from the batch is stored). Returns how many were accepted
    /// and the scenes that ended, ready for the write path.
    pub fn perceive(&mut self, events: &[Event]) -> Result<(u32, Vec<SceneDraft>), AgentError> {
        let me = self.profile.id.clone();
        for event in events {
            let foreign_mind =
                event.speaker != me && (!event.thought.is_empty() || !event.actor_state.is_empty());
            if !event.perceivers.contains(&me) || foreign_mind {
                return Err(AgentError::NotPerceived {
                    seq: event.seq,
                    character: me,
                });
            }
        }
        let mut accepted = 0;
        let mut ended = Vec::new();
        for event in events {
            if event.seq <= self.state.last_seq {
                continue;
            }
            self.state.last_seq = event.seq;
            accepted += 1;
            let Some(perceived) = super::perceived_of(event) else {
                continue;
            };
            // A new scene closes the previous one even if its end was not perceived
            // (the character walked out before it ended).
            if self
                .current_scene()
                .last()
                .is_some_and(|last| last.scene_id != perceived.scene_id)
            {
                ended.extend(self.close_scene());
            }
            if event.speaker == me {
                self.resume_turn(event);
            }
            self.note_own_moment(&perceived);
            super::as_of::note_names(&mut self.state.names, &perceived);
            let closes = perceived.kind == PerceivedKind::SceneEnd;
            if let Some(line) = perceived.line(&me) {
                self.learn(&line);
            }
            self.state.perceived.push(perceived);
            if closes {
                ended.extend(self.close_scene());
            }
        }
        Ok((accepted, ended))
    }

    /// The character's own state as its turn left it (mood, goal and the feeling of
    /// its action), for the world to log with the line: [`Shard::resume_turn`] takes it
    /// back when the line arrives.
    #[must_use]
    pub fn turn_state(&self) -> String {
        let state = TurnState {
            mood: self.state.mood.clone(),
            goal: self.state.goal.clone(),
            feeling: self.state.pending.clone(),
        };
        serde_json::to_string(&state).unwrap_or_default()
    }

    /// Puts back the state the character's turn left, carried by its own logged line.
    /// The same state as the agent already holds when it delivered that line itself;
    /// after a restart between the line's logging and its delivery, the state the
    /// turn left instead of the one before it. A line without one (a person's turn, an
    /// older log) changes nothing, and one that does not read is ignored with a
    /// warning: it costs the feeling, never the line.
    fn resume_turn(&mut self, event: &Event) {
        if event.actor_state.is_empty() {
            return;
        }
        match serde_json::from_str::<TurnState>(&event.actor_state) {
            Ok(turn) => {
                self.state.mood = turn.mood;
                self.state.goal = turn.goal;
                self.state.pending = turn.feeling;
            }
            Err(error) => tracing::warn!(seq = event.seq, %error,
                "the state logged with this character's line does not read; keeping its own"),
        }
    }

    /// Pairs the character's own event with the annotation of the action behind it.
    fn note_own_moment(&mut self, perceived: &Perceived) {
        if perceived.speaker != self.profile.id {
            return;
        }
        // The world may trim or cap the words, so the next own event is the one.
        if let Some(annotation) = self.state.pending.take() {
            self.state.moments.push(Moment {
                seq: perceived.seq,
                felt: annotation,
            });
        }
    }

    fn close_scene(&mut self) -> Option<SceneDraft> {
        let events = self.current_scene().to_vec();
        self.state.unwritten = self.state.perceived.len();
        let moments = std::mem::take(&mut self.state.moments);
        let scene_id = events.first()?.scene_id.clone();
        events
            .iter()
            .any(|e| e.kind != PerceivedKind::SceneEnd)
            .then(|| SceneDraft {
                scene_id,
                events,
                moments,
                names: self.state.names.clone(),
            })
    }

    /// Puts a scene's model rewrite in place of its digest, with the facts it found.
    pub fn commit_rewrite(&mut self, rewritten: Rewritten) {
        if let Some((episode, vector)) = rewritten.episode {
            self.learn(&episode.text);
            let position = self.state.memory.episodic.upsert(episode, &vector);
            self.saved.rewritten(position);
        }
        self.commit_facts(rewritten.facts);
    }

    /// Adds facts, with their vectors, to the semantic layer (and their words to the
    /// vocabulary).
    pub fn commit_facts(&mut self, facts: Vec<(Fact, Vec<f32>)>) {
        for (fact, vector) in facts {
            self.learn(&fact.text);
            self.state.memory.semantic.add(fact, &vector);
        }
    }

    /// Adds what the write path made of a scene to the layers.
    pub fn commit(&mut self, written: WrittenScene) {
        let (episode, vector) = written.episode;
        self.learn(&episode.text);
        self.state.memory.episodic.add(episode, &vector);
        self.commit_facts(written.facts);
        for transition in written.transitions {
            self.state.memory.personality.record(transition);
        }
    }
}

/// What a turn leaves in the character: logged with its line as `actor_state`.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct TurnState {
    pub(super) mood: Mood,
    pub(super) goal: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    feeling: Option<Annotation>,
}
