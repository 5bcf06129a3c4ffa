//! Stage 3's model refinement: entities and relations a scene adds to the knowledge
//! graph, checked against the deterministic graph.

use super::graph;
use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::json;

use super::graph::{ENTITY_KINDS, Graph, GraphFact};
use super::refine::{Ask, Refiner};
use super::scenes::Scene;
use super::text::{contains_phrase, prefix};

#[derive(Deserialize)]
pub(super) struct GraphAnswer {
    entities: Vec<EntityAnswer>,
    relations: Vec<RelationAnswer>,
}

#[derive(Deserialize)]
pub(super) struct EntityAnswer {
    name: String,
    kind: String,
}

#[derive(Deserialize)]
pub(super) struct RelationAnswer {
    subject: String,
    predicate: String,
    object: String,
    #[serde(default)]
    cause: String,
}

pub(super) async fn refine_graph(
    refiner: &Refiner,
    graph: &mut Graph,
    scene: &Scene,
    book: &str,
    world: &BTreeSet<String>,
) {
    if !refiner.has_model() {
        return;
    }
    let text = &book[scene.span.start..scene.span.end];
    let schema = json!({
        "type": "object",
        "properties": {
            "entities": {"type": "array", "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "kind": {"type": "string", "enum": ENTITY_KINDS}
            }, "required": ["name", "kind"]}},
            "relations": {"type": "array", "items": {"type": "object", "properties": {
                "subject": {"type": "string"}, "predicate": {"type": "string"},
                "object": {"type": "string"}, "cause": {"type": "string"}
            }, "required": ["subject", "predicate", "object", "cause"]}}
        },
        "required": ["entities", "relations"]
    });
    let task = format!(
        "List the entities this scene names (kinds: {}) and the facts it establishes as \
         (subject, predicate, object, cause) relations between them; cause is \"\" unless \
         the text gives one.",
        ENTITY_KINDS.join(", ")
    );
    let answer: Option<GraphAnswer> = refiner
        .ask(
            Ask {
                stage: "graph",
                chunk: format!("scene {}", scene.number),
                task: &task,
                body: &prefix(text, 6000),
                schema,
                max_tokens: 400,
            },
            |a: &GraphAnswer| check_answer(text, a),
        )
        .await;
    let Some(a) = answer else { return };
    for e in a.entities {
        match graph.entities.iter_mut().find(|x| x.name == e.name) {
            Some(x) => {
                x.scenes.insert(scene.number);
                x.kind = e.kind;
            }
            None => graph.entities.push(graph::Entity {
                name: e.name,
                kind: e.kind,
                aliases: BTreeSet::new(),
                scenes: [scene.number].into(),
            }),
        }
    }
    for r in a.relations {
        add_relation(graph, scene, world, r);
    }
}

/// A graph answer is kept only when its entities and both ends of each relation occur
/// in the scene's `text`, within the size limits.
fn check_answer(text: &str, a: &GraphAnswer) -> Result<(), String> {
    if a.relations.len() > 20 || a.entities.len() > 40 {
        return Err("at most 40 entities and 20 relations".into());
    }
    for e in &a.entities {
        if !contains_phrase(text, &e.name) {
            return Err(format!(
                "entity `{}` is not in the scene",
                prefix(&e.name, 30)
            ));
        }
    }
    for r in &a.relations {
        for part in [&r.subject, &r.object] {
            if !contains_phrase(text, part) {
                return Err(format!("`{}` is not in the scene", prefix(part, 30)));
            }
        }
        if r.predicate.trim().is_empty() || r.predicate.chars().count() > 60 {
            return Err("each predicate is a short verb phrase".into());
        }
    }
    Ok(())
}

/// Adds one relation the model read as a fact. Who may know it is never the model's,
/// nor the scene's roster: it is whoever was told both its ends, a sentence of the
/// scene naming its subject and one naming its object, each known as the text's own
/// fact for it is (`graph/knowledge.rs`). A relation whose ends no sentence names is
/// left out; so is one already held.
fn add_relation(graph: &mut Graph, scene: &Scene, world: &BTreeSet<String>, r: RelationAnswer) {
    let mut text = format!(
        "{} {} {}",
        r.subject.trim(),
        r.predicate.trim(),
        r.object.trim()
    );
    if !r.cause.trim().is_empty() {
        text.push_str(&format!(", because {}", r.cause.trim()));
    }
    text.push('.');
    // Who was told a sentence of this scene naming `part`, and the latest such place.
    let told = |part: &str| {
        let mut who: BTreeSet<String> = BTreeSet::new();
        let mut at = None;
        for f in graph.facts.iter().filter(|f| {
            f.scene == scene.number && f.source == "text" && contains_phrase(&f.text, part.trim())
        }) {
            who.extend(f.known_by.iter().cloned());
            at = Some(f.at.max(at.unwrap_or(0)));
        }
        at.map(|at| (who, at))
    };
    let (Some((subject, at_subject)), Some((object, at_object))) =
        (told(&r.subject), told(&r.object))
    else {
        return;
    };
    let known_by: BTreeSet<String> = subject
        .intersection(&object)
        .filter(|c| world.contains(*c))
        .cloned()
        .collect();
    let (route, at) = ("observation".to_owned(), at_subject.max(at_object));
    if known_by.is_empty()
        || graph
            .facts
            .iter()
            .any(|f| f.text.eq_ignore_ascii_case(&text))
    {
        return;
    }
    graph.facts.push(GraphFact {
        scene: scene.number,
        text,
        subject: r.subject,
        predicate: r.predicate,
        object: r.object,
        cause: r.cause,
        route,
        known_by,
        source: "model".into(),
        at,
        sentence: String::new(),
    });
}
