//! The scenario file an ingest writes: the book's places, its focus characters with
//! their past (memories, facts, patterns and the names they know, from the scenes up to
//! `past` only), and the rest of the book as the script.

use std::collections::{BTreeMap, BTreeSet};

use super::characters::is_narrators_own;
use super::narration::{in_first_person, tells_inner_life};
use super::text::{
    FocusCharacter, Namer, Segment, is_chinese, is_description, paragraphs, prefix, sentences,
    starts_upper,
};
use super::{Analysis, personality};
use crate::file::{
    Character, Fact, Location, Memory, Open, PathEntry, Pattern, ScenarioFile, Scene, World,
    id_from,
};

fn location_ids(analysis: &Analysis) -> (Vec<Location>, BTreeMap<usize, String>) {
    let mut locations: Vec<Location> = Vec::new();
    let mut of_scene = BTreeMap::new();
    for s in &analysis.scenes {
        let short: String = s
            .location
            .trim_start_matches("the ")
            .split_whitespace()
            .take(5)
            .collect::<Vec<_>>()
            .join(" ");
        let base = id_from(&short, "place");
        let id = match locations.iter().find(|l| l.name == s.location) {
            Some(l) => l.id.clone(),
            None => {
                let mut id = base.clone();
                let mut n = 2;
                while locations.iter().any(|l| l.id == id) {
                    id = format!("{base}-{n}");
                    n += 1;
                }
                locations.push(Location {
                    id: id.clone(),
                    name: s.location.clone(),
                    description: format!(
                        "{}{}.",
                        capitalise(&s.location),
                        if s.atmosphere.is_empty() {
                            String::new()
                        } else {
                            format!(", {}", s.atmosphere)
                        }
                    ),
                });
                id
            }
        };
        of_scene.insert(s.number, id);
    }
    (locations, of_scene)
}

fn capitalise(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map(|f| f.to_uppercase().collect::<String>() + c.as_str())
        .unwrap_or_default()
}

/// The names in `text` of focus characters `knower` does not know by name at `row`,
/// each replaced by that character's description.
fn as_known(
    text: &str,
    knower: &str,
    names: &BTreeMap<String, BTreeSet<String>>,
    characters: &[FocusCharacter],
    namer: &Namer,
) -> String {
    let mut out = String::new();
    let mut at = 0;
    for m in namer.mentions(text) {
        let known = m.character == knower
            || !m.by_name
            || names.get(knower).is_some_and(|k| k.contains(m.character));
        if known {
            continue;
        }
        let description = characters
            .iter()
            .find(|c| c.id == m.character)
            .and_then(FocusCharacter::description)
            .unwrap_or(if is_chinese(text) {
                "某人"
            } else {
                "someone"
            });
        out.push_str(&text[at..m.start]);
        out.push_str(description);
        at = m.end;
    }
    out.push_str(&text[at..]);
    out
}

pub(super) fn scenario_file(
    analysis: &Analysis,
    characters: &[FocusCharacter],
    book: &str,
    name: &str,
    past: usize,
    shard_patterns: &[personality::PatternOut],
) -> anyhow::Result<ScenarioFile> {
    let (locations, location_of) = location_ids(analysis);
    let interview_only = analysis.interview_only();
    let out = Output {
        analysis,
        world: analysis
            .on_stage()
            .union(&interview_only)
            .cloned()
            .collect(),
        interview_only,
        namer: Namer::new(characters),
        empty: BTreeMap::new(),
        past,
        location_of,
    };
    let paths = out.paths();
    let script: Vec<&super::scenes::Scene> = analysis.scenes[past..]
        .iter()
        .filter(|s| s.present().any(|c| out.world.contains(c)))
        .collect();
    let out_characters = characters
        .iter()
        .filter(|c| out.world.contains(&c.id))
        .map(|c| {
            if out.interview_only.contains(&c.id) {
                out.interview_only_character(c, characters, &locations)
            } else {
                out.character(c, &script, &locations, shard_patterns)
            }
        })
        .collect();
    let facts = out.facts(characters);
    let scenes: Vec<Scene> = script.iter().map(|s| out.scene(s, book)).collect();
    let open = scenes.is_empty().then(|| {
        let last = analysis.scenes.last().expect("scenes");
        Open {
            premise: format!(
                "After the end of the book. Its last scene: {}",
                beat(&book[last.span.start..last.span.end])
            ),
            opening: String::new(),
            opening_location: out.location_of[&last.number].clone(),
            rounds: 6,
            openings: Vec::new(),
            scene_turns: 4,
        }
    });
    let title = analysis.title.clone().unwrap_or_else(|| name.to_owned());
    Ok(ScenarioFile {
        version: 1,
        name: name.to_owned(),
        title: title.clone(),
        description: format!(
            "Ingested from a book: {} scenes, the first {past} as the characters' past.",
            analysis.scenes.len()
        ),
        world: World {
            description: format!("The world of {title}."),
        },
        open,
        locations,
        paths,
        characters: out_characters,
        facts,
        scenes,
    })
}

/// What the scenario file is written from.
struct Output<'a> {
    analysis: &'a Analysis,
    /// The focus characters with an agent: those on stage somewhere, and the
    /// interview-only.
    world: BTreeSet<String>,
    /// Those never on stage the book shows living or saying something
    /// ([`Analysis::interview_only`]): never cast, and holding from the start all the
    /// book gives them, since they live none of the script.
    interview_only: BTreeSet<String>,
    namer: Namer,
    empty: BTreeMap<String, BTreeSet<String>>,
    past: usize,
    /// Each scene's place id.
    location_of: BTreeMap<usize, String>,
}

impl Output<'_> {
    /// Who knows whom by name once `scenes_done` scenes are over.
    fn names_at(&self, scenes_done: usize) -> &BTreeMap<String, BTreeSet<String>> {
        if scenes_done == 0 {
            &self.empty
        } else {
            &self.analysis.names[scenes_done - 1]
        }
    }

    /// A path between the places of each two scenes in a row, once per pair.
    fn paths(&self) -> Vec<PathEntry> {
        let mut paths: Vec<PathEntry> = Vec::new();
        for pair in self.analysis.scenes.windows(2) {
            let (a, b) = (
                &self.location_of[&pair[0].number],
                &self.location_of[&pair[1].number],
            );
            let known = paths
                .iter()
                .any(|p| (p.from == *a && p.to == *b) || (p.from == *b && p.to == *a));
            if a != b && !known {
                paths.push(PathEntry {
                    from: a.clone(),
                    to: b.clone(),
                    distance: 1,
                });
            }
        }
        paths
    }

    /// Focus character `c` at the start of the script: where it is first cast (else the
    /// first place), its past as memories, its patterns, whom it knows by name, what strangers see.
    fn character(
        &self,
        c: &FocusCharacter,
        script: &[&super::scenes::Scene],
        locations: &[Location],
        shard_patterns: &[personality::PatternOut],
    ) -> Character {
        let (analysis, past) = (self.analysis, self.past);
        let first_cast = script
            .iter()
            .find(|s| s.present().any(|p| *p == c.id))
            .copied()
            .or_else(|| {
                analysis
                    .scenes
                    .iter()
                    .rev()
                    .find(|s| s.present().any(|p| *p == c.id))
            })
            .map_or_else(
                || locations[0].id.clone(),
                |s| self.location_of[&s.number].clone(),
            );
        let memories = analysis
            .summaries
            .iter()
            .filter(|s| s.character == c.id && s.scene <= past)
            .map(|s| Memory {
                id: format!("scene-{}", s.scene),
                text: s.text.clone(),
            })
            .collect();
        let patterns = shard_patterns
            .iter()
            .filter(|p| p.character == c.id)
            .enumerate()
            .map(|(i, p)| Pattern {
                id: format!("pattern-{}", i + 1),
                description: p.description.clone(),
                excerpts: p.excerpts.clone(),
            })
            .collect();
        // What strangers see: the first description that holds no form of the name.
        let name_forms: Vec<&str> = c.forms().filter(|f| !is_description(f)).collect();
        let known_as = c
            .aliases
            .iter()
            .filter(|a| is_description(a) && !is_narrators_own(a))
            .find(|d| !name_forms.iter().any(|n| d.contains(n)))
            .cloned()
            .unwrap_or_default();
        Character {
            id: c.id.clone(),
            name: c.name.clone(),
            aliases: proper_aliases(c),
            profile: profile(analysis, c, past),
            style: style(analysis, &c.id, past),
            location: first_cast,
            knows: self.known_by_name(&c.id, past),
            known_as,
            memories,
            patterns,
            ..Character::default()
        }
    }

    /// An interview-only character (`Analysis::interview_only`): its memories are, per
    /// scene, the sentences that show it living or saying something there, worded as
    /// told (a son's "my father received a letter" stays his son's words) and as it
    /// knows the people in them; its profile its description and the first two of those
    /// not told in the first person; its style from its retold lines; the names it knows at the book's end. It is placed
    /// nowhere (its `location` is where a director who brings it in with the flag
    /// would put it).
    fn interview_only_character(
        &self,
        c: &FocusCharacter,
        characters: &[FocusCharacter],
        locations: &[Location],
    ) -> Character {
        let analysis = self.analysis;
        let mut by_scene: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        for f in analysis
            .graph
            .facts
            .iter()
            .filter(|f| f.known_by.contains(&c.id))
        {
            let text = as_known(
                &f.text,
                &c.id,
                self.names_at(f.scene),
                characters,
                &self.namer,
            );
            by_scene.entry(f.scene).or_default().push(text);
        }
        let memories = by_scene
            .iter()
            .map(|(scene, told)| Memory {
                id: format!("scene-{scene}"),
                text: prefix(
                    &told.iter().take(5).cloned().collect::<Vec<_>>().join(" "),
                    600,
                ),
            })
            .collect();
        // A profile is told about it, never in anyone's first person (a retold "I").
        let lived: Vec<String> = by_scene
            .values()
            .flatten()
            .filter(|t| !in_first_person(t))
            .take(2)
            .cloned()
            .collect();
        let profile = match (c.description(), lived.is_empty()) {
            (Some(d), true) => format!("{d}."),
            (Some(d), false) => format!("{d}. {}", prefix(&lived.join(" "), 400)),
            (None, false) => prefix(&lived.join(" "), 400),
            (None, true) => format!("{}.", c.name),
        };
        Character {
            id: c.id.clone(),
            name: c.name.clone(),
            aliases: proper_aliases(c),
            profile,
            style: style(analysis, &c.id, analysis.scenes.len()),
            location: locations[0].id.clone(),
            knows: self.known_by_name(&c.id, analysis.scenes.len()),
            memories,
            interview_only: true,
            ..Character::default()
        }
    }

    /// Whom `id` knows by name, among those with an agent, once `scenes_done` scenes
    /// are over.
    fn known_by_name(&self, id: &str, scenes_done: usize) -> Vec<String> {
        self.names_at(scenes_done)
            .get(id)
            .map(|k| {
                k.iter()
                    .filter(|w| self.world.contains(*w))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether `knower` starts with fact `f`: a fact of the past, or any fact for one
    /// interview-only.
    fn starts_with(&self, knower: &str, f: &super::graph::GraphFact) -> bool {
        self.world.contains(knower)
            && (f.scene <= self.past || self.interview_only.contains(knower))
    }

    /// The graph's facts of the past (all of them for the interview-only), each worded
    /// as its knowers know the people in it.
    fn facts(&self, characters: &[FocusCharacter]) -> Vec<Fact> {
        let mut facts = Vec::new();
        for (n, f) in self.analysis.graph.facts.iter().enumerate() {
            // One copy per wording: a knower who does not know a name gets the
            // description, in the sentence and in its subject and object alike.
            let mut wordings: BTreeMap<(String, String, String), Vec<String>> = BTreeMap::new();
            for knower in f.known_by.iter().filter(|k| self.starts_with(k, f)) {
                let known =
                    |t: &str| as_known(t, knower, self.names_at(f.scene), characters, &self.namer);
                wordings
                    .entry((known(&f.text), known(&f.subject), known(&f.object)))
                    .or_default()
                    .push(knower.clone());
            }
            let several = wordings.len() > 1;
            for (i, ((text, subject, object), known_by)) in wordings.into_iter().enumerate() {
                facts.push(Fact {
                    id: if several {
                        format!("s{}-f{}-{}", f.scene, n + 1, i + 1)
                    } else {
                        format!("s{}-f{}", f.scene, n + 1)
                    },
                    text,
                    known_by,
                    subject,
                    predicate: f.predicate.clone(),
                    object,
                    route: f.route.clone(),
                    ..Fact::default()
                });
            }
        }
        facts
    }

    /// Book scene `s` as a scripted scene: its cast, whom each knows by name as it
    /// starts, its beat and opening, and turns in proportion to its lines.
    fn scene(&self, s: &super::scenes::Scene, book: &str) -> Scene {
        let cast: Vec<String> = s
            .present()
            .filter(|c| self.world.contains(*c))
            .cloned()
            .collect();
        let learned = self.names_at(s.number - 1);
        let knows: BTreeMap<String, Vec<String>> = cast
            .iter()
            .filter_map(|c| {
                let k: Vec<String> = learned
                    .get(c)
                    .map(|k| {
                        k.iter()
                            .filter(|w| self.world.contains(*w) && *w != c)
                            .cloned()
                            .collect()
                    })
                    .unwrap_or_default();
                (!k.is_empty()).then(|| (c.clone(), k))
            })
            .collect();
        let text = &book[s.span.start..s.span.end];
        let lines = s.utterances.len();
        let max_turns = u32::try_from((lines / 2).clamp(4, 10)).unwrap_or(10);
        Scene {
            id: format!("scene-{}", s.number),
            location: self.location_of[&s.number].clone(),
            cast,
            beat: beat(text),
            min_turns: max_turns.min(3),
            max_turns,
            opening: opening(text),
            knows,
        }
    }
}

/// The aliases of `c` that are names, not descriptions.
fn proper_aliases(c: &FocusCharacter) -> Vec<String> {
    c.aliases
        .iter()
        .filter(|a| !is_description(a))
        .cloned()
        .collect()
}

fn narration(text: &str) -> Vec<String> {
    paragraphs(text)
        .into_iter()
        .flat_map(|p| {
            p.into_iter().filter_map(|s| match s {
                Segment::Narration(n) => Some(n),
                Segment::Quote(_) => None,
            })
        })
        .collect()
}

/// The world-side beat: the scene's first and last narration sentences.
fn beat(text: &str) -> String {
    let told = narration(text).join(" ");
    let all: Vec<&str> = sentences(&told)
        .into_iter()
        .filter(|s| s.split_whitespace().count() >= 6)
        .collect();
    match (all.first(), all.last()) {
        (Some(first), Some(last)) if first != last => prefix(&format!("{first} … {last}"), 600),
        (Some(first), _) => prefix(first, 600),
        _ => "The scene as the book tells it.".to_owned(),
    }
}

/// The opening narration, which everyone present perceives: the scene's first run of
/// narration told wholly in the third person and outside anyone's mind. A first-person
/// passage is the narrator's own view ("I was limp and weary … I had heard little good
/// of him"), and so is a sentence of reflection among its first-person ones ("The
/// treasure, however, was a different matter"); an omniscient narrator's account of
/// what someone felt or resolved ("John Ferrier's heart was sore within him") is that
/// character's alone. A run holding any of these is passed over rather than told to the
/// others; a scene with nothing else opens with no narration.
fn opening(text: &str) -> String {
    narration(text)
        .iter()
        .find_map(|run| {
            let all = sentences(run);
            if all
                .iter()
                .any(|s| in_first_person(s) || tells_inner_life(s))
            {
                return None;
            }
            let kept: Vec<&str> = all.into_iter().filter(|s| told_whole(s)).collect();
            (!kept.is_empty()).then(|| prefix(&kept.join(" "), 500))
        })
        .unwrap_or_default()
}

/// A sentence of narration that stands alone: not the tail of a speech tag ("said
/// Holmes, lifting him down"), and of four words at least.
fn told_whole(sentence: &str) -> bool {
    starts_upper(sentence) && sentence.split_whitespace().count() >= 4
}

/// The character's own description, as the prompt gives it after the name: how
/// strangers see it, and the first narration sentences naming it, from its past scenes
/// only. A narrator's first-person sentences about someone else are the narrator's
/// view ("Again and again I had registered a vow…"), never that character's, so they
/// are left out of every profile but the narrator's own.
fn profile(analysis: &Analysis, c: &FocusCharacter, past: usize) -> String {
    let namer = Namer::new(std::slice::from_ref(c));
    let told: Vec<&str> = analysis.scenes[..past]
        .iter()
        .flat_map(|s| &s.sentences)
        .filter(|s| s.spoken_by.is_none() && !namer.mentions(&s.text).is_empty())
        .filter(|s| told_whole(&s.text) && (c.narrator || !in_first_person(&s.text)))
        .map(|s| s.text.as_str())
        .take(2)
        .collect();
    let mut parts = Vec::new();
    if let Some(d) = c.description() {
        parts.push(format!("{d}."));
    }
    if !told.is_empty() {
        parts.push(prefix(&told.join(" "), 400));
    }
    if parts.is_empty() {
        // A profile may not be empty; the prompt then says the name once.
        return format!("{}.", c.name);
    }
    parts.join(" ")
}

/// How it speaks, from its lines in the past scenes: length and questions.
fn style(analysis: &Analysis, id: &str, past: usize) -> String {
    let lines: Vec<&str> = analysis.scenes[..past]
        .iter()
        .flat_map(|s| &s.utterances)
        .filter(|u| u.speaker.focus() == Some(id))
        .map(|u| u.text.as_str())
        .collect();
    if lines.is_empty() {
        return "in their own voice".to_owned();
    }
    let words: usize = lines.iter().map(|l| l.split_whitespace().count()).sum();
    let mean = words / lines.len();
    let questions = lines.iter().filter(|l| l.trim_end().ends_with('?')).count();
    let length = match mean {
        0..=6 => "in short, plain sentences",
        7..=15 => "in measured sentences",
        _ => "at length",
    };
    if questions * 3 >= lines.len() {
        format!("{length}, often asking questions")
    } else {
        length.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::opening;

    #[test]
    fn an_opening_tells_the_others_nothing_the_narrator_only_thought() {
        let text = "\"Quite so,\" I asked.\n\n\
                    It was between eight and nine o'clock now, and I was limp and weary. \
                    The treasure, however, was a different matter. I had heard little good \
                    of him.\n\n\
                    \"Here we are,\" said Holmes, lifting the dog down.\n\n\
                    The fog lay thick upon the river. Holmes stood at the window.";
        assert_eq!(
            opening(text),
            "The fog lay thick upon the river. Holmes stood at the window."
        );
        // An omniscient narrator's view into one mind is passed over too.
        let text = "John Ferrier's heart was sore within him. He had always determined \
                    that his daughter would not wed a Mormon.\n\n\
                    \"Come in,\" said Brigham Young.\n\n\
                    The prophet sat down in the chair by the window.";
        assert_eq!(
            opening(text),
            "The prophet sat down in the chair by the window."
        );
        // Nothing but the narrator's view: no opening at all.
        assert_eq!(opening("I was tired, and I slept.\n\nI woke."), "");
    }
}
