//! The scene under way: perceived events stored (and foreign ones refused), the
//! character's own moments noted, a scene closed into a draft for the write path, and
//! what the write path made of it committed to the layers.

use super::*;

impl Shard {
    /// Stores perceived events. Events already seen are skipped; an event this
    /// character did not perceive, or that carries someone else's thought, is refused
    /// (and nothing from the batch is stored). Returns how many were accepted and the
    /// scenes that ended, ready for the write path.
    pub fn perceive(&mut self, events: &[Event]) -> Result<(u32, Vec<SceneDraft>), AgentError> {
        let me = self.profile.id.clone();
        for event in events {
            if !event.perceivers.contains(&me) || (!event.thought.is_empty() && event.speaker != me)
            {
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
            let Some(perceived) = Perceived::from_event(event) else {
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
            self.note_own_moment(&perceived);
            let seen = perceived.perceivers.iter().zip(&perceived.perceiver_names);
            for (id, name) in [
                (&perceived.speaker, &perceived.speaker_name),
                (&perceived.target, &perceived.target_name),
            ]
            .into_iter()
            .chain(seen)
            {
                if !id.is_empty() && !name.is_empty() {
                    self.state.names.insert(id.clone(), name.clone());
                }
            }
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

    /// Pairs the character's own event with the annotation of the action behind it.
    fn note_own_moment(&mut self, perceived: &Perceived) {
        if perceived.speaker != self.profile.id {
            return;
        }
        // The world may trim or cap the words, so the next own event is the one.
        if let Some(annotation) = self.state.pending.take() {
            self.state.moments.push(Moment {
                seq: perceived.seq,
                emotion: annotation.emotion,
                intensity: annotation.intensity,
                intent: annotation.intent,
                trigger: annotation.trigger,
                trigger_pieces: annotation.trigger_pieces,
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
