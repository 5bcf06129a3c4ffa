//! A logged story written out for readers: a plain transcript, Markdown, or prose that a
//! model rewrites scene by scene (BookWorld's `generate_story` step). The transcript
//! and Markdown need no model and keep every logged event, one line each, in log order.
//!
//! An export reads the whole log, as an omniscient watcher does: it is for people and
//! judges, never for an agent.

use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel};
use dramatis_proto::v1::{Event, EventKind};

/// How an export is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Plain text, as `dramatis run` prints it off a terminal.
    Transcript,
    /// A Markdown document: a heading per scene, speakers in bold, actions in italics.
    Markdown,
    /// Narrative prose, a model's rewriting of each scene's transcript.
    Prose,
}

/// One event's line, with no markup: `None` for an event that shows nothing.
fn plain(event: &Event) -> Option<String> {
    let text = event.text.trim();
    Some(match event.kind() {
        EventKind::SceneStart => format!("====== {text} ======"),
        EventKind::SceneEnd => format!("— {text} —"),
        EventKind::Narration if event.director => {
            format!("[director → {}] {text}", perceivers(event))
        }
        EventKind::Narration => text.to_owned(),
        EventKind::Movement if event.travel_rounds > 0 => format!(
            "→ {} sets off for {} ({} round{}): {text}",
            event.speaker_name,
            event.destination,
            event.travel_rounds,
            if event.travel_rounds == 1 { "" } else { "s" }
        ),
        EventKind::Movement => format!("→ {text}"),
        EventKind::Speech | EventKind::Action | EventKind::Unspecified => {
            if text.is_empty() {
                return None;
            }
            let body = if event.kind() == EventKind::Action {
                format!("*{text}*")
            } else {
                text.to_owned()
            };
            format!("{}{}: {body}", speaker(event), addressee(event))
        }
    })
}

fn speaker(event: &Event) -> &str {
    if event.speaker_name.is_empty() {
        &event.speaker
    } else {
        &event.speaker_name
    }
}

fn addressee(event: &Event) -> String {
    if event.target_name.is_empty() {
        String::new()
    } else {
        format!(" (to {})", event.target_name)
    }
}

fn perceivers(event: &Event) -> String {
    if event.perceiver_names.is_empty() {
        event.perceivers.join(", ")
    } else {
        event.perceiver_names.join(", ")
    }
}

/// `text` with Markdown's inline markup characters escaped, so a line reads as written.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(
            c,
            '\\' | '*' | '_' | '`' | '[' | ']' | '<' | '>' | '#' | '|'
        ) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// One event as a Markdown block: `None` for an event that shows nothing.
fn markdown_line(event: &Event) -> Option<String> {
    let text = escape(event.text.trim());
    Some(match event.kind() {
        EventKind::SceneStart => format!("## {text}"),
        EventKind::SceneEnd => format!("*— {text} —*"),
        EventKind::Narration if event.director => {
            format!("> **Director → {}:** *{text}*", escape(&perceivers(event)))
        }
        EventKind::Narration => format!("*{text}*"),
        EventKind::Movement => format!("→ *{text}*"),
        EventKind::Speech | EventKind::Action | EventKind::Unspecified => {
            if text.is_empty() {
                return None;
            }
            let body = if event.kind() == EventKind::Action {
                format!("*{text}*")
            } else {
                text
            };
            format!(
                "**{}**{}: {body}",
                escape(speaker(event)),
                escape(&addressee(event))
            )
        }
    })
}

/// The plain transcript of `events`: one line per event that shows something, with a
/// blank line before each scene.
#[must_use]
pub fn transcript(events: &[Event]) -> String {
    let mut out = String::new();
    for event in events {
        if let Some(line) = plain(event) {
            if event.kind() == EventKind::SceneStart && !out.is_empty() {
                out.push('\n');
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The Markdown document of `events`, titled `title`: a paragraph per event.
#[must_use]
pub fn markdown(title: &str, events: &[Event]) -> String {
    let mut out = format!("# {}\n", escape(title));
    for line in events.iter().filter_map(markdown_line) {
        out.push('\n');
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The events of `events` cut into scenes: each run from a scene start to the event
/// before the next one (events before the first start make a scene of their own).
#[must_use]
pub fn scenes(events: &[Event]) -> Vec<&[Event]> {
    let mut cuts: Vec<usize> = events
        .iter()
        .enumerate()
        .filter(|(i, e)| *i > 0 && e.kind() == EventKind::SceneStart)
        .map(|(i, _)| i)
        .collect();
    cuts.push(events.len());
    let mut from = 0;
    let mut out = Vec::with_capacity(cuts.len());
    for to in cuts {
        if to > from {
            out.push(&events[from..to]);
        }
        from = to;
    }
    out
}

/// The instruction a scene's prose is written under.
const PROSE_SYSTEM: &str = "You turn the transcript of one scene of a story into narrative prose, \
as a novelist would: third person, past tense. Keep every line's meaning and who said or \
did it; you may quote speech. Add no event, fact or name the transcript does not hold. \
Answer with the prose only.";

/// What a scene's prose cost, and whether the model gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProseReport {
    pub scenes: usize,
    /// Scenes the model gave no usable prose for (twice): their transcript stands in.
    pub kept_as_transcript: usize,
    pub calls: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The story of `events` as prose, titled `title`: each scene's transcript rewritten by
/// `model` (asked twice at most), under the scene's heading. A scene the model fails on
/// keeps its transcript, so the export is whole either way. `done` hears each scene.
pub async fn prose(
    title: &str,
    events: &[Event],
    model: &dyn LanguageModel,
    mut done: impl FnMut(usize, usize),
) -> (String, ProseReport) {
    let scenes = scenes(events);
    let mut report = ProseReport {
        scenes: scenes.len(),
        ..ProseReport::default()
    };
    let mut out = format!("# {title}\n");
    for (i, scene) in scenes.iter().enumerate() {
        let heading = scene
            .first()
            .filter(|e| e.kind() == EventKind::SceneStart)
            .map(|e| e.text.trim().to_owned());
        let body: Vec<&Event> = scene
            .iter()
            .filter(|e| !matches!(e.kind(), EventKind::SceneStart | EventKind::SceneEnd))
            .collect();
        let lines: Vec<String> = body.iter().filter_map(|e| plain(e)).collect();
        out.push('\n');
        if let Some(heading) = &heading {
            out.push_str(&format!("## {heading}\n\n"));
        }
        if lines.is_empty() {
            done(i + 1, scenes.len());
            continue;
        }
        let written = rewrite(heading.as_deref(), &lines, model, &mut report).await;
        match written {
            Some(text) => out.push_str(text.trim()),
            None => {
                report.kept_as_transcript += 1;
                out.push_str(&lines.join("\n"));
            }
        }
        out.push('\n');
        done(i + 1, scenes.len());
    }
    (out, report)
}

/// One scene's prose from `model`, asked again once when it fails or answers nothing.
async fn rewrite(
    heading: Option<&str>,
    lines: &[String],
    model: &dyn LanguageModel,
    report: &mut ProseReport,
) -> Option<String> {
    let user = format!(
        "Scene: {}\n\nTranscript:\n{}\n\nWrite this scene as prose.",
        heading.unwrap_or("(untitled)"),
        lines.join("\n")
    );
    let request = CompletionRequest::new(vec![
        ChatMessage::system(PROSE_SYSTEM),
        ChatMessage::user(user),
    ])
    .with_max_tokens(1024)
    .with_temperature(0.7);
    for _ in 0..2 {
        report.calls += 1;
        match model.complete(&request, None).await {
            Ok(done) => {
                report.prompt_tokens += u64::from(done.prompt_tokens);
                report.completion_tokens += u64::from(done.completion_tokens);
                if !done.text.trim().is_empty() {
                    return Some(done.text);
                }
            }
            Err(error) => tracing::warn!(%error, "prose export: the model failed a scene"),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: EventKind, speaker: &str, text: &str) -> Event {
        Event {
            kind: kind as i32,
            speaker: speaker.to_lowercase(),
            speaker_name: speaker.to_owned(),
            text: text.to_owned(),
            turn: u32::from(!speaker.is_empty()),
            ..Event::default()
        }
    }

    #[test]
    fn scenes_are_cut_at_each_start_and_markdown_escapes_what_it_would_read_as_markup() {
        let events = [
            event(EventKind::SceneStart, "", "Scene 1: Bart's"),
            event(EventKind::Speech, "Holmes", "I have *found* it"),
            event(EventKind::SceneEnd, "", "ended"),
            event(EventKind::SceneStart, "", "Scene 2: Baker Street"),
            event(EventKind::Action, "Watson", "sits down"),
        ];
        let cut = scenes(&events);
        assert_eq!(cut.iter().map(|s| s.len()).collect::<Vec<_>>(), [3, 2]);
        let md = markdown("A Study", &events);
        assert!(md.contains("**Holmes**: I have \\*found\\* it\n"), "{md}");
        assert!(md.contains("**Watson**: *sits down*\n"), "{md}");
        let plain = transcript(&events);
        assert_eq!(
            plain,
            "====== Scene 1: Bart's ======\nHolmes: I have *found* it\n— ended —\n\n\
             ====== Scene 2: Baker Street ======\nWatson: *sits down*\n"
        );
    }
}
