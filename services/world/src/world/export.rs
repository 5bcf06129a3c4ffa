//! One character written out as it stands (`World.ExportCharacter`): the profile its
//! agent is given (its own facts only), the lorebook fields its facts carry, what the
//! director revealed to it, and what its scenario carries of the card it came from.

use dramatis_proto::v1 as pb;

use super::World;
use crate::convert::attach_request;
use crate::error::WorldError;

impl World {
    /// `character` (an id, name or alias) as it stands. Reads the log; changes nothing.
    pub async fn export_character(
        &self,
        character: &str,
    ) -> Result<pb::ExportCharacterResponse, WorldError> {
        let id = self.character_id(character)?;
        let scenario = self.scenario();
        let profile = attach_request(&self.id, &scenario, &id)
            .profile
            .unwrap_or_default();
        let entries = profile
            .knowledge
            .iter()
            .map(|known| {
                scenario
                    .facts
                    .iter()
                    .find(|f| f.id == known.id)
                    .map(|f| f.entry.clone())
                    .unwrap_or_default()
            })
            .collect();
        let (tags, card) = scenario
            .character(&id)
            .map(|c| (c.tags.clone(), c.card.clone()))
            .unwrap_or_default();
        // A revelation is the director's event told to some, at no place.
        let revealed = self
            .log
            .read(&self.id, 1)
            .await?
            .into_iter()
            .filter(|e| e.director && e.location.is_empty() && e.perceivers.contains(&id))
            .map(|e| e.text)
            .collect();
        Ok(pb::ExportCharacterResponse {
            profile: Some(profile),
            tags,
            card,
            entries,
            revealed,
        })
    }
}
