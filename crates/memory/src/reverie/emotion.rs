//! The personality track's cheap steps (ReverieMem §3.4, Fusion Injection): `Emo-Gate`
//! decides from the moment itself whether anything emotionally salient happened, so
//! routine turns cost no model call and keep the previous pattern (emotional inertia);
//! `Emo-Transition` proposes the new state from the character's own emotion-transition
//! record, falling back to the cue words of the moment.

use crate::PersonalityLayer;

use super::Mood;

/// The emotions an utterance is annotated with (the action schema's enum).
pub const EMOTIONS: [&str; 8] = [
    "calm",
    "joy",
    "curiosity",
    "surprise",
    "suspicion",
    "anger",
    "fear",
    "sadness",
];

/// Maps a free-form label onto [`EMOTIONS`] (by shared stem or a common synonym);
/// unknown labels read as calm.
#[must_use]
pub fn normalise_emotion(label: &str) -> &'static str {
    let label = label.trim().to_lowercase();
    let synonym = match label.as_str() {
        "angry" | "annoyed" | "irritated" => Some("anger"),
        "afraid" | "scared" | "anxious" | "worried" => Some("fear"),
        "sad" | "grief" | "sorrow" => Some("sadness"),
        "happy" | "glad" | "pleased" | "amused" => Some("joy"),
        "wary" | "doubtful" | "distrust" => Some("suspicion"),
        "interested" | "intrigued" => Some("curiosity"),
        "astonished" | "amazed" | "shocked" => Some("surprise"),
        _ => None,
    };
    let shared = |e: &str| {
        e.chars()
            .zip(label.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    synonym
        .or_else(|| {
            EMOTIONS
                .iter()
                .copied()
                .find(|e| shared(e) >= 5.min(e.len()))
        })
        .unwrap_or("calm")
}

/// Cue words per emotion (word stems, matched at word starts).
const CUES: [(&str, &[&str]); 7] = [
    (
        "joy",
        &[
            "delight",
            "glad",
            "wonderful",
            "splendid",
            "excellent",
            "happy",
            "laugh",
        ],
    ),
    (
        "curiosity",
        &["curious", "wonder", "puzzl", "strange", "mystery", "riddle"],
    ),
    (
        "surprise",
        &[
            "astonish",
            "amaz",
            "extraordinary",
            "good heavens",
            "incredible",
            "sudden",
        ],
    ),
    (
        "suspicion",
        &[
            "suspect", "lie", "liar", "lying", "doubt", "conceal", "hiding", "trust",
        ],
    ),
    (
        "anger",
        &[
            "fool", "idiot", "nonsense", "outrage", "how dare", "insult", "furious", "damn",
        ],
    ),
    (
        "fear",
        &[
            "afraid", "danger", "murder", "kill", "dead", "death", "blood", "threat", "poison",
        ],
    ),
    (
        "sadness",
        &[
            "sorry", "grief", "mourn", "lost", "alone", "wound", "tears", "poor",
        ],
    ),
];

/// The emotion the cue words of `text` point to, with an intensity in 0–1; `None`
/// when the text is routine.
#[must_use]
pub fn cue_emotion(text: &str) -> Option<(&'static str, f32)> {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != ' ')
        .flat_map(str::split_whitespace)
        .collect();
    let joined = words.join(" ");
    let hits = |stem: &str| -> usize {
        if stem.contains(' ') {
            joined.matches(stem).count()
        } else {
            words.iter().filter(|w| w.starts_with(stem)).count()
        }
    };
    let mut best: Option<(&'static str, usize)> = None;
    for (emotion, stems) in CUES {
        let count: usize = stems.iter().map(|s| hits(s)).sum();
        if count > best.map_or(0, |(_, c)| c) {
            best = Some((emotion, count));
        }
    }
    // Exclamations strengthen the emotion the words name, or read as surprise alone.
    let exclamations = text.matches('!').count();
    let (emotion, count) = match best {
        Some((emotion, count)) => (emotion, count + exclamations),
        None if exclamations > 0 => ("surprise", exclamations),
        None => return None,
    };
    #[allow(clippy::cast_precision_loss)]
    Some((emotion, (0.2 + 0.2 * count as f32).min(1.0)))
}

/// `Emo-Gate(q, c)`: fires on a new scene (a new situation), when no pattern has been
/// chosen yet, or when the moment carries an emotional cue. Routine exchanges keep
/// the state in place.
#[must_use]
pub fn gate_fires(mood: &Mood, scene_id: &str, trigger: &str) -> bool {
    mood.pattern.is_none() || mood.scene_id != scene_id || cue_emotion(trigger).is_some()
}

/// How similar a past trigger must be for the record to predict the new state.
pub const RECORD_MATCH: f32 = 0.6;

/// `Emo-Transition(c)`: the next state. When the character met a moment like this
/// before (its record holds a trigger at least [`RECORD_MATCH`] similar), it feels as
/// it did then; otherwise the cue words decide; otherwise the previous state holds.
#[must_use]
pub fn transition(
    layer: &PersonalityLayer,
    previous: &Mood,
    trigger: &str,
    trigger_vector: &[f32],
) -> (String, f32) {
    if let Some((past, score)) = layer.nearest_transition(trigger_vector)
        && score >= RECORD_MATCH
    {
        return (past.emotion.clone(), past.intensity);
    }
    if let Some((emotion, intensity)) = cue_emotion(trigger) {
        return (emotion.to_owned(), intensity);
    }
    if previous.emotion.is_empty() {
        ("calm".to_owned(), 0.3)
    } else {
        (previous.emotion.clone(), previous.intensity)
    }
}

/// True when `text` acknowledges not knowing (an in-character refusal).
#[must_use]
pub fn is_refusal(text: &str) -> bool {
    const PHRASES: [&str; 9] = [
        "cannot answer",
        "can't answer",
        "do not know",
        "don't know",
        "no idea",
        "cannot say",
        "can't say",
        "not know",
        "no knowledge",
    ];
    let lower = text.to_lowercase().replace('’', "'");
    PHRASES.iter().any(|p| lower.contains(p))
}

#[cfg(test)]
mod tests {
    use crate::EmotionTransition;

    use super::*;

    #[test]
    fn cues_name_the_emotion_and_routine_text_has_none() {
        assert_eq!(cue_emotion("Pass the salt, please."), None);
        let (emotion, intensity) =
            cue_emotion("There is blood on the floor; he is dead.").expect("salient");
        assert_eq!(emotion, "fear");
        assert!((intensity - 0.6).abs() < 1e-6, "{intensity}");
        assert_eq!(cue_emotion("Look out!").map(|c| c.0), Some("surprise"));
        assert_eq!(
            cue_emotion("You are a liar!").map(|c| c.0),
            Some("suspicion")
        );
        assert_eq!(normalise_emotion("Suspicious"), "suspicion");
        assert_eq!(normalise_emotion("bored"), "calm");
        assert_eq!(normalise_emotion("Curious"), "curiosity");
        assert_eq!(normalise_emotion("angry"), "anger");
        assert_eq!(normalise_emotion("joy"), "joy");
    }

    #[test]
    fn gate_keeps_the_state_on_routine_turns() {
        let mood = Mood {
            emotion: "curiosity".into(),
            intensity: 0.5,
            pattern: Some("probing".into()),
            scene_id: "s1".into(),
        };
        assert!(!gate_fires(&mood, "s1", "Shall we take a cab?"));
        assert!(gate_fires(&mood, "s1", "Murder! There has been a murder!"));
        assert!(gate_fires(&mood, "s2", "Shall we take a cab?"), "new scene");
        assert!(
            gate_fires(&Mood::default(), "s1", "Good morning."),
            "no pattern yet"
        );
    }

    #[test]
    fn transition_prefers_the_record_then_cues_then_the_previous_state() {
        let mut layer = PersonalityLayer::default();
        layer.record(EmotionTransition {
            emotion: "anger".into(),
            intensity: 0.9,
            trigger: "Lestrade mocks the deduction".into(),
            intent: "retort".into(),
            seq: 3,
            trigger_vector: vec![1.0, 0.0],
        });
        let previous = Mood {
            emotion: "curiosity".into(),
            intensity: 0.4,
            ..Mood::default()
        };
        let similar = transition(&layer, &previous, "mockery again", &[0.9, 0.1]);
        assert_eq!(similar, ("anger".to_owned(), 0.9));
        let cue = transition(&layer, &previous, "He is dead.", &[0.0, 1.0]);
        assert_eq!(cue.0, "fear");
        let routine = transition(&layer, &previous, "A cab waits.", &[0.0, 1.0]);
        assert_eq!(routine, ("curiosity".to_owned(), 0.4));
    }

    #[test]
    fn refusals_are_recognised() {
        assert!(is_refusal("I cannot answer that from my own knowledge."));
        assert!(is_refusal("I don’t know, sir."));
        assert!(!is_refusal("The ring was found in Brixton."));
    }
}
