//! Stage 3's model refinement: entities and relations a scene adds to the knowledge
//! graph, checked against the deterministic graph.

use super::graph;
use std::collections::BTreeSet;

use serde::Deserialize;
use serde_json::json;

use super::graph::{ENTITY_KINDS, Graph, GraphFact};
use super::refine::{Ask, Refiner};
use super::scenes::Scene;
use super::text::{Namer, contains_phrase, prefix};

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
    namer: &Namer,
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
        add_relation(graph, scene, (namer, world), r);
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
/// nor the scene's roster: it is known as the sentence of the scene that states it
/// (one naming both its ends) is, by [`super::knowledge`] through the text's own fact
/// for that sentence. A relation no sentence states is left out; so is one already
/// held.
fn add_relation(
    graph: &mut Graph,
    scene: &Scene,
    (_namer, world): (&Namer, &BTreeSet<String>),
    r: RelationAnswer,
) {
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
    let Some(told) = graph.facts.iter().find(|f| {
        f.scene == scene.number
            && f.source == "text"
            && contains_phrase(&f.text, r.subject.trim())
            && contains_phrase(&f.text, r.object.trim())
    }) else {
        return;
    };
    let known_by: BTreeSet<String> = told.known_by.intersection(world).cloned().collect();
    let (route, at) = (told.route.clone(), told.at);
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
