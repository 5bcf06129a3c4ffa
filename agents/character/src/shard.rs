//! One character's shard: its profile, the facts it started with and every event it
//! perceived, plus the record of the prompts built from it. Nothing else gets in.

use dramatis_proto::v1::{CharacterProfile, Event, EventKind, MemoryItem, PromptRecord};

use crate::AgentError;

/// How many perceived events a prompt recalls (the simple recent-events memory).
pub const RECENT_EVENTS: usize = 10;

/// A character's memory.
#[derive(Debug, Clone)]
pub struct Shard {
    pub profile: CharacterProfile,
    memory: Vec<MemoryItem>,
    last_seq: u64,
    prompts: Vec<PromptRecord>,
}

impl Shard {
    /// A shard holding the profile and the character's own starting memories, knowledge
    /// and personality patterns.
    #[must_use]
    pub fn new(profile: CharacterProfile) -> Self {
        let item = |id: String, source: &str, text: &str| MemoryItem {
            id,
            source: source.into(),
            text: text.to_owned(),
            seq: 0,
        };
        let memories = profile
            .memories
            .iter()
            .map(|m| item(format!("memory:{}", m.id), "episodic", &m.text));
        let facts = profile
            .knowledge
            .iter()
            .map(|f| item(format!("fact:{}", f.id), "knowledge", &f.text));
        let patterns = profile.patterns.iter().map(|p| {
            let text = format!("{} e.g. {}", p.description, p.excerpts.join(" / "));
            item(format!("pattern:{}", p.id), "personality", &text)
        });
        let memory = memories.chain(facts).chain(patterns).collect();
        Self {
            profile,
            memory,
            last_seq: 0,
            prompts: Vec::new(),
        }
    }

    #[must_use]
    pub fn id(&self) -> &str {
        &self.profile.id
    }

    #[must_use]
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    #[must_use]
    pub fn memory(&self) -> &[MemoryItem] {
        &self.memory
    }

    #[must_use]
    pub fn prompts(&self) -> &[PromptRecord] {
        &self.prompts
    }

    /// Stores perceived events. Events already seen are skipped; an event this
    /// character did not perceive, or that carries someone else's thought, is refused
    /// (and nothing from the batch is stored).
    pub fn perceive(&mut self, events: &[Event]) -> Result<u32, AgentError> {
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
        for event in events {
            if event.seq <= self.last_seq {
                continue;
            }
            self.last_seq = event.seq;
            if let Some(text) = self.render(event) {
                self.memory.push(MemoryItem {
                    id: format!("event:{}", event.seq),
                    source: "perceived".into(),
                    text,
                    seq: event.seq,
                });
            }
            accepted += 1;
        }
        Ok(accepted)
    }

    /// A perceived event in this character's own words-of-record.
    fn render(&self, event: &Event) -> Option<String> {
        let me = &self.profile.id;
        let who = if event.speaker == *me {
            "You".to_owned()
        } else {
            display(&event.speaker_name, &event.speaker).to_owned()
        };
        let to = if event.target.is_empty() {
            String::new()
        } else if event.target == *me {
            " (to you)".to_owned()
        } else {
            format!(" (to {})", display(&event.target_name, &event.target))
        };
        let line = match event.kind() {
            EventKind::Speech => format!("{who}{to}: \"{}\"", event.text),
            EventKind::Action | EventKind::Movement => format!("{who}{to}: {}", event.text),
            EventKind::Narration => event.text.clone(),
            EventKind::SceneStart => format!("-- {} --", event.text),
            EventKind::SceneEnd | EventKind::Unspecified => return None,
        };
        if event.speaker == *me && !event.thought.is_empty() {
            Some(format!("{line} (you thought: {})", event.thought))
        } else {
            Some(line)
        }
    }

    /// Starting memories and knowledge, then the most recent perceived events.
    /// (Personality patterns wait for the memory-fusion step.)
    #[must_use]
    pub fn recall(&self) -> Vec<&MemoryItem> {
        let knowledge = self
            .memory
            .iter()
            .filter(|m| m.source == "episodic" || m.source == "knowledge");
        let perceived: Vec<&MemoryItem> = self
            .memory
            .iter()
            .filter(|m| m.source == "perceived")
            .collect();
        let recent = &perceived[perceived.len().saturating_sub(RECENT_EVENTS)..];
        knowledge.chain(recent.iter().copied()).collect()
    }

    /// Remembers a prompt built from this shard.
    pub fn record_prompt(&mut self, record: PromptRecord) {
        self.prompts.push(record);
    }
}

fn display<'a>(name: &'a str, id: &'a str) -> &'a str {
    if name.is_empty() { id } else { name }
}

#[cfg(test)]
mod tests {
    use dramatis_proto::v1::KnownFact;

    use super::*;

    fn shard() -> Shard {
        Shard::new(CharacterProfile {
            id: "watson".into(),
            name: "John Watson".into(),
            knowledge: vec![KnownFact {
                id: "wound".into(),
                text: "I was wounded at Maiwand.".into(),
                ..KnownFact::default()
            }],
            ..CharacterProfile::default()
        })
    }

    fn speech(seq: u64, speaker: &str, perceivers: &[&str], thought: &str) -> Event {
        Event {
            seq,
            speaker: speaker.into(),
            kind: EventKind::Speech as i32,
            text: format!("line {seq}"),
            perceivers: perceivers.iter().map(|p| (*p).to_owned()).collect(),
            thought: thought.into(),
            ..Event::default()
        }
    }

    #[test]
    fn stores_perceived_events_once_and_refuses_foreign_ones() {
        let mut shard = shard();
        let batch = [
            speech(1, "holmes", &["holmes", "watson"], ""),
            speech(2, "watson", &["watson"], "tired"),
        ];
        assert_eq!(shard.perceive(&batch).expect("accepted"), 2);
        assert_eq!(
            shard.perceive(&batch).expect("replayed"),
            0,
            "duplicates are skipped"
        );
        let not_mine = shard.perceive(&[speech(3, "holmes", &["holmes"], "")]);
        assert!(matches!(
            not_mine,
            Err(AgentError::NotPerceived { seq: 3, .. })
        ));
        let leaked_thought = shard.perceive(&[speech(4, "holmes", &["watson"], "secret")]);
        assert!(matches!(
            leaked_thought,
            Err(AgentError::NotPerceived { seq: 4, .. })
        ));
        let texts: Vec<&str> = shard.memory().iter().map(|m| m.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "I was wounded at Maiwand.",
                "holmes: \"line 1\"",
                "You: \"line 2\" (you thought: tired)"
            ]
        );
        assert_eq!(shard.last_seq(), 2);
    }

    #[test]
    fn recall_keeps_knowledge_and_the_latest_events() {
        let mut shard = shard();
        let events: Vec<Event> = (1..=15)
            .map(|s| speech(s, "holmes", &["watson"], ""))
            .collect();
        shard.perceive(&events).expect("accepted");
        let recalled: Vec<&str> = shard.recall().iter().map(|m| m.id.as_str()).collect();
        assert_eq!(recalled.len(), 1 + RECENT_EVENTS);
        assert_eq!(recalled[0], "fact:wound");
        assert_eq!(recalled[1], "event:6");
        assert_eq!(recalled[RECENT_EVENTS], "event:15");
    }
}
