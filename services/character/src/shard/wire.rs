//! The shard and the wire: an event of the world as the character perceived it, every
//! memory item tagged with its layer, and the prompt audit as records naming the items
//! each prompt held.

use dramatis_proto::v1::{Event, EventKind, MemoryItem, MemoryRef, PromptRecord};

use super::{EPISODIC, PERCEIVED, PERSONALITY, Perceived, PerceivedKind, SEMANTIC, Shard, display};

/// The world's `event` as the character perceived it; `None` for an event of no kind.
pub(crate) fn perceived_of(event: &Event) -> Option<Perceived> {
    let kind = match event.kind() {
        EventKind::Speech => PerceivedKind::Speech,
        EventKind::Action => PerceivedKind::Action,
        EventKind::Movement => PerceivedKind::Movement,
        EventKind::Narration => PerceivedKind::Narration,
        EventKind::SceneStart => PerceivedKind::SceneStart,
        EventKind::SceneEnd => PerceivedKind::SceneEnd,
        EventKind::Unspecified => return None,
    };
    Some(Perceived {
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
        others: event.others_perceiving,
        place_description: event.place_description.clone(),
        // Only the character's own line carries one: perceive refuses anyone else's.
        own_state: event.actor_state.clone(),
    })
}

impl Shard {
    /// Everything the shard holds, as memory items tagged with their layer.
    #[must_use]
    pub fn memory(&self) -> Vec<MemoryItem> {
        let mut items = self.layer_items();
        items.extend(self.module_items());
        items
    }

    /// The items of ReverieMem's layers and the perceived lines.
    pub(super) fn layer_items(&self) -> Vec<MemoryItem> {
        let layers = &self.state.memory;
        let item = |id: &str, source: &str, text: String, seq: u64| MemoryItem {
            id: id.to_owned(),
            source: source.to_owned(),
            text,
            seq,
        };
        let episodic = layers
            .episodic
            .items()
            .iter()
            .map(|m| item(&m.id, EPISODIC, m.text.clone(), 0));
        let semantic = layers
            .semantic
            .facts()
            .iter()
            .map(|f| item(&f.id, SEMANTIC, f.text.clone(), 0));
        let patterns = layers.personality.patterns().iter().map(|p| {
            let text = format!("{} e.g. {}", p.description, p.excerpts.join(" / "));
            item(&p.id, PERSONALITY, text, 0)
        });
        let me = self.id();
        let perceived = self.state.perceived.iter().filter_map(|p| {
            p.line(me)
                .map(|line| item(&p.memory_id(), PERCEIVED, line, p.seq))
        });
        episodic
            .chain(semantic)
            .chain(patterns)
            .chain(perceived)
            .collect()
    }

    /// The items the memory modules hold.
    #[must_use]
    pub fn module_items(&self) -> Vec<MemoryItem> {
        self.state
            .modules
            .items()
            .into_iter()
            .map(|(id, source, text)| MemoryItem {
                id,
                source,
                text,
                seq: 0,
            })
            .collect()
    }

    /// Every prompt built from this shard, oldest first.
    #[must_use]
    pub fn prompts(&self) -> Vec<PromptRecord> {
        self.state
            .audit
            .iter()
            .map(|entry| PromptRecord {
                memory_ids: entry.items.iter().map(|(id, _)| id.clone()).collect(),
                items: entry
                    .items
                    .iter()
                    .map(|(id, layer)| MemoryRef {
                        id: id.clone(),
                        layer: layer.clone(),
                        module: module_of(layer).to_owned(),
                    })
                    .collect(),
                prompt: entry.prompt.clone(),
                purpose: entry.purpose.clone(),
                character_id: self.profile.id.clone(),
                timestamp_ms: entry.timestamp_ms,
                flagged: entry.flagged.clone(),
                guard: entry.guard.clone(),
            })
            .collect()
    }
}

/// The memory module an audit layer belongs to: ReverieMem's three layers are
/// `reverie`, the scene under way is `scene`, and module items are named
/// `<module>.<kind>`.
#[must_use]
pub fn module_of(layer: &str) -> &str {
    match layer {
        EPISODIC | SEMANTIC | PERSONALITY => "reverie",
        PERCEIVED => "scene",
        other => other.split('.').next().unwrap_or(other),
    }
}
