//! The echo guard on a turn's line. A line that repeats most of a line in the
//! character's recent context (the last lines it perceived, its own included, and the
//! personality excerpts its prompt showed as style anchors; measured by
//! `dramatis_memory::echo`) is asked for once more, with the echo named and a note not
//! to repeat it. A retry that echoes too, or is unusable, gives the turn up to the
//! in-character fallback, as a failed call does. Each decision is noted on the prompt
//! it answered (`PromptRecord.guard`).

use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel};
use dramatis_memory::echo::{RECENT_LINES, echoed};
use dramatis_proto::v1::Usage;

use crate::action::{ParsedAction, parse_action};
use crate::error::AgentError;
use crate::prompt::BuiltPrompt;
use crate::shard::{PerceivedKind, Shard};

/// The lines a turn's line must not echo: the texts of the last [`RECENT_LINES`]
/// lines the character perceived (speech and actions, anyone's), then `excerpts`.
pub(crate) fn recent_context(shard: &Shard, excerpts: &[String]) -> Vec<String> {
    let mut lines: Vec<String> = shard
        .perceived()
        .iter()
        .rev()
        .filter(|p| matches!(p.kind, PerceivedKind::Speech | PerceivedKind::Action))
        .take(RECENT_LINES)
        .map(|p| p.text.clone())
        .collect();
    lines.reverse();
    lines.extend(excerpts.iter().cloned());
    lines
}

/// What the guard made of a turn's reply.
pub(crate) enum Echo {
    /// The line echoes nothing.
    Kept,
    /// The line echoed; the retry's reply, whose line does not.
    Replaced(ParsedAction, String),
    /// The retry echoed too, or was unusable: the turn falls back.
    GivenUp,
}

/// The least temperature an echo's retry samples at.
const RETRY_TEMPERATURE: f32 = 0.9;

/// The instruction that asks for an echoing line again.
fn retry_instruction(echo: &str) -> String {
    format!(
        "That line repeats something already said: \"{echo}\". Reply again, in character, \
         with a line of your own that moves the scene on. Do not repeat or quote earlier lines."
    )
}

/// The echo guard on `line`, the text of the model's answer to `built` (sent as
/// `request`), against `context` (see [`recent_context`]).
pub(crate) async fn guard_echo(
    shard: &mut Shard,
    model: &dyn LanguageModel,
    (built, request): (&BuiltPrompt, &CompletionRequest),
    line: &str,
    context: &[String],
    usage: &mut Usage,
) -> Result<Echo, AgentError> {
    let Some((echo, share)) = echoed(line, context.iter().map(String::as_str)) else {
        return Ok(Echo::Kept);
    };
    let echo = echo.to_owned();
    tracing::info!(character = shard.id(), %line, %echo, share, "echo guard: asked again");
    shard.note_last_prompt(format!(
        "echo: {:.0}% of this line's words are in \"{echo}\"; asked again",
        share * 100.0
    ));
    // The echoing reply is not shown back: a small model copies whatever its prompt
    // holds, its own last answer first. The retry samples warmer, to leave the rut.
    let mut retry = built.clone();
    retry
        .messages
        .push(ChatMessage::user(retry_instruction(&echo)));
    retry.audit(shard, "act");
    let request = CompletionRequest {
        messages: retry.messages,
        temperature: request.temperature.max(RETRY_TEMPERATURE),
        ..request.clone()
    };
    let again = match model.complete(&request, None).await {
        Ok(again) => again,
        Err(error) => {
            tracing::warn!(character = shard.id(), %error, "echo guard: the retry failed");
            shard.note_last_prompt("echo guard: the retry failed; the turn falls back".into());
            return Ok(Echo::GivenUp);
        }
    };
    usage.count_call(again.prompt_tokens, again.completion_tokens);
    let Some(action) = parse_action(&again.text) else {
        shard.note_last_prompt("echo guard: the retry was unusable; the turn falls back".into());
        return Ok(Echo::GivenUp);
    };
    if let Some((still, share)) = echoed(&action.text, context.iter().map(String::as_str)) {
        tracing::info!(character = shard.id(), line = %action.text, echo = %still, share,
            "echo guard: the retry echoes too; the turn falls back");
        shard.note_last_prompt(format!(
            "echo again: {:.0}% of this line's words are in \"{still}\"; replaced by the \
             in-character fallback",
            share * 100.0
        ));
        return Ok(Echo::GivenUp);
    }
    shard.note_last_prompt("echo guard: the new line stands".into());
    Ok(Echo::Replaced(action, again.text))
}
