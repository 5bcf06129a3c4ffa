//! Names are knowledge: over loopback, with the shipped scenario, Watson's agent never
//! receives Holmes's name (nor his id) until a line he hears names him, and then uses
//! it; and in an open story every companion a character remembers was where it was.

use std::collections::{BTreeMap, BTreeSet};

use dramatis_llm::ScriptRule;
use dramatis_proto::v1::{Event, EventKind, WatchRequest, advance_request, watch_response};
use dramatis_tests::Cluster;

const CAST: [&str; 4] = ["holmes", "lestrade", "stamford", "watson"];
const HOLMES_SEEN: &str = "a tall, lean young man with a test-tube in his hand";
const INTRODUCTION: &str = "Dr Watson, this is Mr Sherlock Holmes, who has rooms to share.";

fn introduction() -> Vec<ScriptRule> {
    vec![ScriptRule {
        // Once Watson has spoken in the laboratory (so he acted with Holmes there first).
        when: vec![
            "Character: Stamford".into(),
            "Introduce your old chief".into(),
            "John Watson: \"Scripted line".into(),
        ],
        reply: format!(
            r#"{{"kind":"speech","target":"watson","text":"{INTRODUCTION}","thought":"","destination":""}}"#
        ),
    }]
}

async fn advance(cluster: &Cluster, id: &str, until: advance_request::Until) -> Vec<Event> {
    dramatis_tests::advance(&mut cluster.world().await, id, until).await
}

/// Watson's prompts so far, in the order his agent sent them.
async fn watson_prompts(cluster: &Cluster, id: &str) -> Vec<String> {
    cluster
        .audit(id, "watson")
        .await
        .into_iter()
        .flat_map(|a| a.prompts)
        .map(|p| p.prompt)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watson_sees_a_stranger_until_stamford_names_holmes_then_uses_the_name() {
    let cluster = Cluster::start(&CAST, &introduction()).await;
    let id = cluster.create("study-in-scarlet", "names").await;
    advance(&cluster, &id, advance_request::Until::SceneEnd(true)).await;
    // The laboratory, a turn at a time, up to the line that names Holmes.
    let mut named = None;
    for _ in 0..12 {
        let events = advance(&cluster, &id, advance_request::Until::Turns(1)).await;
        named = events.into_iter().find(|e| e.text == INTRODUCTION);
        if named.is_some() {
            break;
        }
    }
    let named = named.expect("Stamford introduces Holmes in the laboratory");
    let before = watson_prompts(&cluster, &id).await;
    assert!(
        before.iter().any(|p| p.contains(HOLMES_SEEN)),
        "Watson acted with Holmes in the room before the introduction"
    );
    for prompt in &before {
        assert!(
            !prompt.contains("Holmes")
                && !prompt.contains("Sherlock")
                && !prompt.contains("holmes"),
            "a prompt before Holmes was named: {prompt}"
        );
    }
    // Nor did anything before the introduction reach Watson's shard with the name.
    let shard = cluster.snapshot(&id, "watson").await;
    let before_events: String = shard
        .memory
        .iter()
        .filter(|m| m.source == "perceived" && m.seq < named.seq)
        .map(|m| m.text.as_str())
        .collect();
    assert!(before_events.contains(HOLMES_SEEN), "{before_events}");
    assert!(!before_events.contains("Holmes"), "{before_events}");

    advance(&cluster, &id, advance_request::Until::ScriptEnd(true)).await;
    let all = watson_prompts(&cluster, &id).await;
    let after = &all[before.len()..];
    let acts_with_holmes: Vec<&String> = after
        .iter()
        .filter(|p| p.contains("With you:") && p.contains("(id person-"))
        .collect();
    assert!(
        !acts_with_holmes.is_empty(),
        "Watson acts again with Holmes there"
    );
    for prompt in acts_with_holmes {
        assert!(prompt.contains("Sherlock Holmes"), "{prompt}");
        assert!(!prompt.contains(&format!("{HOLMES_SEEN} (id")), "{prompt}");
    }
}

/// Plays `scenario` to its end and checks that every companion in every character's
/// scene digest ("I was with …") was, at some event of that scene the character
/// perceived, at the same place as the character (or was the one coming or going).
/// Co-presence is recomputed from the whole-world log's movements alone.
async fn companions_were_there(scenario_name: &str, characters: &[&str], rules: &[ScriptRule]) {
    let cluster = Cluster::start(characters, rules).await;
    let id = cluster.create(scenario_name, "companions").await;
    advance(&cluster, &id, advance_request::Until::ScriptEnd(true)).await;
    let scenario = dramatis_scenario::Scenario::load(
        &dramatis_tests::scenarios_dir().join(format!("{scenario_name}/scenario.toml")),
    )
    .expect("shipped scenario");
    let mut at: BTreeMap<String, String> = scenario
        .characters
        .iter()
        .map(|c| (c.id.clone(), c.location.clone()))
        .collect();
    let mut log = cluster
        .world()
        .await
        .watch(WatchRequest {
            world_id: id.clone(),
            from_seq: 1,
            no_follow: true,
            ..WatchRequest::default()
        })
        .await
        .expect("watch")
        .into_inner();
    let mut seen: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut movements = 0;
    while let Some(message) = log.message().await.expect("stream healthy") {
        let Some(watch_response::Item::Event(event)) = message.item else {
            continue;
        };
        let moving = event.kind() == EventKind::Movement;
        for who in &event.perceivers {
            let mut places: Vec<&str> = at.get(who).map(String::as_str).into_iter().collect();
            if moving && *who == event.speaker {
                places.push(&event.location);
            }
            let with = at
                .iter()
                .filter(|(_, place)| places.contains(&place.as_str()))
                .map(|(c, _)| c.clone())
                .chain((!event.speaker.is_empty()).then(|| event.speaker.clone()));
            seen.entry((who.clone(), event.scene_id.clone()))
                .or_default()
                .extend(with);
        }
        if moving {
            movements += 1;
            if event.travel_rounds > 0 {
                at.remove(&event.speaker);
            } else {
                at.insert(event.speaker.clone(), event.location.clone());
            }
        }
    }
    assert!(movements > 0, "someone moved in {scenario_name}");
    let mut digests = 0;
    for who in characters {
        let shard = cluster.snapshot(&id, who).await;
        for memory in shard.memory.iter().filter(|m| m.source == "episodic") {
            let (Some((_, with)), Some(scene)) = (
                memory.text.split_once(" I was with "),
                memory.id.strip_prefix("episode:"),
            ) else {
                continue;
            };
            digests += 1;
            let there = &seen[&((*who).to_owned(), scene.to_owned())];
            let with = with.split_once('.').map_or(with, |(names, _)| names);
            for absent in scenario
                .characters
                .iter()
                .filter(|c| c.id != *who && !there.contains(&c.id))
            {
                for name in [absent.name.as_str(), absent.appearance()] {
                    assert!(
                        !with.contains(name),
                        "{who} remembers being with {name:?} in {scene}, where only {there:?} were"
                    );
                }
            }
        }
    }
    assert!(digests > 0, "some scene was shared in {scenario_name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everyone_a_character_remembers_being_with_was_there() {
    companions_were_there("study-in-scarlet", &CAST, &[]).await;
    // Tom sets off for the pawnshop whenever he is in the lane: journeys in an open story.
    let tom_walks = ScriptRule {
        when: vec!["Character: Tom Reddy".into(), "pawnshop".into()],
        reply: r#"{"kind":"move","target":"","text":"Tom slips away.","thought":"","destination":"pawnshop"}"#.into(),
    };
    companions_were_there(
        "lamplighters-ledger",
        &["ada", "coyle", "tom", "varga"],
        &[tom_walks],
    )
    .await;
}
