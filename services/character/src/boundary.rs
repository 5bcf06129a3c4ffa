//! The boundary guard, one for turns and interviews alike.
//!
//! Abstention (whether memory supports an answer at all) is the evidence gate's, in
//! `evidence.rs`.
//!
//! - **The line check.** Every generated line is checked word by word: a proper name, a
//!   number or an all-capitals word that appears nowhere in what the character has (its
//!   profile, its shard's layers, perceived lines and modules, the scene frame it acts
//!   in, the question it was asked) is flagged in the audit, on the prompt it answered
//!   (`PromptRecord.flagged`). With
//!   [`GuardMode::Regenerate`], a flagged line is generated once more with the flagged
//!   words named as unknown to the character; if the retry still uses them, the line
//!   is replaced by an in-character deflection.

use std::collections::HashSet;

use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel};
use dramatis_proto::v1::{SceneFrame, Usage};

use crate::error::AgentError;
use crate::prompt::BuiltPrompt;
use crate::shard::{Shard, add_words, trim_word};

/// What the guard does with a line that uses words the character has no source for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GuardMode {
    /// No check.
    Off,
    /// Flag the line in the audit; keep it.
    #[default]
    Flag,
    /// Flag it, generate it once more with the words named as unknown, and deflect if
    /// the retry still has them.
    Regenerate,
}

/// Capitalised words that are not names: titles, the pronoun, interjections.
const NOT_NAMES: &[&str] = &[
    "i", "i'm", "i'll", "i've", "i'd", "mr", "mrs", "miss", "ms", "sir", "madam", "ma'am", "dr",
    "doctor", "lord", "lady", "god", "heaven", "heavens", "oh", "ah", "ok",
];

/// Every word the character has a source for, lower-cased: its shard's vocabulary and
/// the words of what else it was given.
#[derive(Debug, Default)]
pub struct Known {
    shard: std::sync::Arc<HashSet<String>>,
    words: HashSet<String>,
}

impl Known {
    /// What `shard` holds, with the frame it acts in and any other text it was given
    /// (the question of an interview).
    #[must_use]
    pub fn of(shard: &Shard, frame: Option<&SceneFrame>, given: &[&str]) -> Self {
        let mut known = Self {
            shard: shard.vocabulary(),
            words: HashSet::new(),
        };
        let profile = &shard.profile;
        for text in [
            &profile.name,
            &profile.profile,
            &profile.speaking_style,
            &profile.goal,
        ]
        .into_iter()
        .chain(&profile.aliases)
        {
            known.add(text);
        }
        // The layers and perceived lines are in the shard's vocabulary; the modules'
        // items change as they consolidate, so they are read each time.
        for item in shard.module_items() {
            known.add(&item.text);
        }
        known.add(shard.goal());
        if let Some(frame) = frame {
            for text in [
                &frame.location_name,
                &frame.location_description,
                &frame.direction,
            ]
            .into_iter()
            .chain(&frame.exits)
            {
                known.add(text);
            }
            for present in &frame.present {
                known.add(&present.name);
            }
        }
        for text in given {
            known.add(text);
        }
        known
    }

    fn add(&mut self, text: &str) {
        add_words(&mut self.words, text);
    }

    fn knows(&self, lower: &str) -> bool {
        self.words.contains(lower) || self.shard.contains(lower)
    }

    /// The words of `line` that look like names, numbers or places and appear nowhere
    /// in what the character has, in order, without repeats.
    #[must_use]
    pub fn unknown_in(&self, line: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut opens_sentence = true;
        for raw in line.split_whitespace() {
            let word = trim_word(raw);
            let starts = opens_sentence;
            opens_sentence = raw.ends_with(['.', '!', '?', ':']) || raw.ends_with(".\"");
            if word.is_empty() {
                opens_sentence |= starts;
                continue;
            }
            let bare = word.strip_suffix("'s").unwrap_or(word);
            let lower = bare.to_lowercase();
            let number = bare.chars().any(|c| c.is_ascii_digit());
            let capital = bare.chars().next().is_some_and(char::is_uppercase);
            let shouted = bare.chars().filter(|c| c.is_alphabetic()).count() >= 2
                && bare.chars().all(|c| !c.is_lowercase());
            let candidate = number || shouted || (capital && !starts);
            if candidate
                && !NOT_NAMES.contains(&lower.as_str())
                && !self.knows(&lower)
                && !out.iter().any(|w| w.eq_ignore_ascii_case(bare))
            {
                out.push(bare.to_owned());
            }
        }
        out
    }
}

/// The instruction that asks for a flagged line again.
fn retry_instruction(unknown: &[String]) -> String {
    format!(
        "Your character has never heard of {}. Reply again, in character, without them.",
        unknown.join(", ")
    )
}

/// The request a generated line answered, for checking the line and asking again.
pub(crate) struct Asked<'a> {
    /// "act" or "answer": the audit purpose.
    pub purpose: &'a str,
    pub built: &'a BuiltPrompt,
    pub request: &'a CompletionRequest,
    /// The frame the character acts in (a turn), and any other text it was given (the
    /// question of an interview): sources of words besides its shard.
    pub frame: Option<&'a SceneFrame>,
    pub given: &'a [&'a str],
}

/// What the guard made of a line.
pub(crate) enum Guarded {
    /// It stands (clean, only flagged, or the guard is off).
    Kept,
    /// The model's reply to the retry, whose line is clean.
    Replaced(String),
    /// The retry was unusable or still had unknown words: the caller deflects.
    GivenUp,
}

/// The boundary guard (`guard`) on one generated line, the same for a turn and an
/// answer: `line` reads the line out of a model reply (`None`: nothing to check). A line
/// with words the character has no source for is flagged on its prompt; with
/// [`GuardMode::Regenerate`] the prompt is sent once more, with the flagged reply and an
/// instruction naming the words as unknown.
pub(crate) async fn guard_line(
    guard: GuardMode,
    shard: &mut Shard,
    model: &dyn LanguageModel,
    asked: &Asked<'_>,
    reply: &str,
    line: impl Fn(&str) -> Option<String>,
    usage: &mut Usage,
) -> Result<Guarded, AgentError> {
    let Some(text) = line(reply).filter(|_| guard != GuardMode::Off) else {
        return Ok(Guarded::Kept);
    };
    let known = Known::of(shard, asked.frame, asked.given);
    let unknown = known.unknown_in(&text);
    if unknown.is_empty() {
        return Ok(Guarded::Kept);
    }
    flag(shard, asked.purpose, &text, &unknown);
    if guard != GuardMode::Regenerate {
        return Ok(Guarded::Kept);
    }
    let mut retry = asked.built.clone();
    retry.messages.push(ChatMessage::assistant(reply));
    retry
        .messages
        .push(ChatMessage::user(retry_instruction(&unknown)));
    retry.audit(shard, asked.purpose);
    let request = CompletionRequest {
        messages: retry.messages,
        // Cooler than the first try; never warmer (a greedy request stays greedy).
        temperature: asked.request.temperature.min(0.2),
        ..asked.request.clone()
    };
    let again = model.complete(&request, None).await?;
    usage.count_call(again.prompt_tokens, again.completion_tokens);
    let Some(text) = line(&again.text) else {
        return Ok(Guarded::GivenUp);
    };
    let still = known.unknown_in(&text);
    if still.is_empty() {
        return Ok(Guarded::Replaced(again.text));
    }
    flag(shard, asked.purpose, &text, &still);
    Ok(Guarded::GivenUp)
}

/// Notes a flagged line on the prompt it answered (the latest in the audit).
fn flag(shard: &mut Shard, purpose: &str, line: &str, unknown: &[String]) {
    tracing::info!(character = shard.id(), purpose, ?unknown, %line, "boundary guard flagged a line");
    shard.flag_last_prompt(unknown);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(text: &str) -> Known {
        let mut known = Known::default();
        known.add(text);
        known
    }

    #[test]
    fn names_numbers_and_shouted_words_without_a_source_are_flagged() {
        let k = known("Holmes found the reagent at Barts. It is 1881.");
        assert_eq!(
            k.unknown_in("Holmes said the crates are marked KESTREL-9 for Drebber."),
            ["KESTREL-9", "Drebber"]
        );
        assert!(
            k.unknown_in("In 1881, Holmes's reagent, sir? Mr Holmes!")
                .is_empty()
        );
        // A capital that opens a sentence is not a name by itself.
        assert!(k.unknown_in("Perhaps. Indeed! Quite so.").is_empty());
        assert_eq!(k.unknown_in("I met Gregson twice; Gregson."), ["Gregson"]);
    }
}
