//! Every input limit of the world service, in one place. `dramatis serve` sets each
//! from a flag of the same name (README, "Running it for others", lists them). A
//! request over a limit is refused before any work is done, with INVALID_ARGUMENT (a
//! value too large) or RESOURCE_EXHAUSTED (the service or world is full), and the
//! message quotes at most [`dramatis_runtime::QUOTE_CHARS`] characters of what was sent.

use std::time::Duration;

use crate::error::WorldError;

pub use dramatis_runtime::quote;

/// The limits of one world service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// Largest message a client may send, in bytes (tonic refuses larger ones with
    /// OUT_OF_RANGE before any handler runs).
    pub max_message_bytes: usize,
    /// Longest interview question, in characters.
    pub max_question_chars: usize,
    /// Longest line a person may play, in characters.
    pub max_line_chars: usize,
    /// Longest world id, in characters.
    pub max_world_id_chars: usize,
    /// Most rounds an open story may run.
    pub max_rounds: u32,
    /// Most turns one `Advance` may ask for.
    pub max_turns: u32,
    /// Most worlds the service holds at once.
    pub max_worlds: usize,
    /// Most client connections the service holds at once.
    pub max_connections: usize,
    /// Most people playing in one world at once.
    pub max_seats: usize,
    /// Most `Watch` streams the service serves at once, and per world.
    pub max_watchers: usize,
    pub max_watchers_per_world: usize,
    /// A watcher that leaves its buffer full this long is cut off.
    pub watcher_stall: Duration,
    /// Most characters an inline sandbox spec may hold (each is an agent's memory).
    pub max_characters: usize,
    /// Most locations an inline sandbox spec may hold.
    pub max_locations: usize,
    /// Most paths between locations an inline sandbox spec may hold.
    pub max_paths: usize,
    /// Most facts an inline sandbox spec may hold.
    pub max_facts: usize,
    /// Longest the story waits for a person's action.
    pub seat_wait: Duration,
    /// A finished world's characters are detached (and agents started for them
    /// stopped) after this long without a call to them; `None`: never.
    pub idle_detach: Option<Duration>,
    /// Most others a character's turn frame and each line it perceives name (bounded
    /// attention), for a scenario that does not set its own `attention`.
    pub attention: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_message_bytes: 1024 * 1024,
            max_question_chars: 2_000,
            max_line_chars: 400,
            max_world_id_chars: 64,
            max_rounds: 1_000,
            max_turns: 10_000,
            max_worlds: 1_000,
            max_connections: dramatis_runtime::grpc::DEFAULT_MAX_CONNECTIONS,
            max_seats: 16,
            max_watchers: 10_000,
            max_watchers_per_world: 1_000,
            watcher_stall: crate::hub::WATCHER_STALL,
            max_characters: 1_000,
            max_locations: 1_000,
            max_paths: 10_000,
            max_facts: 10_000,
            seat_wait: Duration::from_secs(600),
            idle_detach: Some(Duration::from_secs(300)),
            attention: dramatis_scenario::DEFAULT_ATTENTION,
        }
    }
}

impl Limits {
    /// `scenario` with the service's attention when it sets none of its own.
    #[must_use]
    pub fn attention_for(
        &self,
        scenario: std::sync::Arc<dramatis_scenario::Scenario>,
    ) -> std::sync::Arc<dramatis_scenario::Scenario> {
        if scenario.attention.is_some() {
            return scenario;
        }
        let mut own = dramatis_scenario::Scenario::clone(&scenario);
        own.attention = Some(self.attention);
        std::sync::Arc::new(own)
    }

    /// Refuses `value` (the field `field`) when it is longer than `max` characters.
    pub fn check_chars(field: &str, value: &str, max: usize) -> Result<(), WorldError> {
        let count = value.chars().count();
        if count > max {
            return Err(WorldError::InvalidArgument(format!(
                "{field} has {count} characters; the limit is {max}: {}",
                quote(value)
            )));
        }
        Ok(())
    }

    /// Refuses a count over its limit (`flag` names the `serve` flag that raises it).
    pub fn check_count(field: &str, value: u64, max: u64, flag: &str) -> Result<(), WorldError> {
        if value > max {
            return Err(WorldError::InvalidArgument(format!(
                "{field} is {value}; this service allows at most {max} (serve {flag})"
            )));
        }
        Ok(())
    }
}

impl Limits {
    /// Refuses an inline spec with more of anything than this service allows, before
    /// it is read any further.
    pub fn check_spec(&self, spec: &dramatis_proto::v1::SandboxSpec) -> Result<(), WorldError> {
        for (field, count, max, flag) in [
            (
                "characters",
                spec.characters.len(),
                self.max_characters,
                "--max-characters",
            ),
            (
                "locations",
                spec.locations.len(),
                self.max_locations,
                "--max-locations",
            ),
            ("paths", spec.paths.len(), self.max_paths, "--max-paths"),
            ("facts", spec.facts.len(), self.max_facts, "--max-facts"),
        ] {
            if count > max {
                return Err(WorldError::Full(format!(
                    "the sandbox spec has {count} {field}; this service allows at most {max} \
                     (serve {flag})"
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_refuse_only_what_is_over_the_limit() {
        assert!(Limits::check_chars("question", "abc", 3).is_ok());
        let error = Limits::check_chars("question", "abcd", 3).expect_err("over");
        assert_eq!(
            error.to_string(),
            "invalid argument: question has 4 characters; the limit is 3: \"abcd\""
        );
        assert!(Limits::check_count("rounds", 10, 10, "--max-rounds").is_ok());
        let error = Limits::check_count("rounds", 11, 10, "--max-rounds").expect_err("over");
        assert!(
            error
                .to_string()
                .contains("at most 10 (serve --max-rounds)")
        );
    }
}
