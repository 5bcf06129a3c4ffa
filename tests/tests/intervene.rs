//! The director's events (`World.Intervene`) on the shipped scenario, over loopback with
//! the scripted model: each reaches exactly those who perceive it, and nothing of a
//! whisper reaches anyone else's shard or prompts.

use dramatis_proto::v1::{
    BringIn, Event, EventKind, InterveneRequest, Narrate, Reveal, Whisper, advance_request,
    intervene_request::Intervention,
};
use dramatis_tests::{Cluster, advance, assert_refused, replay_as, world_info};

const CAST: [&str; 4] = ["holmes", "lestrade", "stamford", "watson"];
const WHISPER_CANARY: &str = "WHISPER-CANARY-3317";

async fn intervene(cluster: &Cluster, id: &str, intervention: Intervention) -> Event {
    cluster
        .world()
        .await
        .intervene(InterveneRequest {
            world_id: id.into(),
            intervention: Some(intervention),
        })
        .await
        .expect("intervene")
        .into_inner()
        .event
        .expect("the logged event")
}

/// Each character's shard texts and act prompts in world `id`.
async fn memories_and_prompts(cluster: &Cluster, id: &str) -> Vec<(String, String, Vec<String>)> {
    let mut all = Vec::new();
    for character in CAST {
        let shard = cluster.shard_text(id, character).await;
        let prompts = cluster
            .audit(id, character)
            .await
            .into_iter()
            .flat_map(|audit| audit.prompts)
            .map(|record| record.prompt)
            .collect();
        all.push((character.to_owned(), shard, prompts));
    }
    all
}

/// A story of the shipped scenario in a cluster of its own, with a whisper to Watson
/// after two turns when `whisper` is set, run to its end.
async fn story(whisper: bool) -> (Cluster, Vec<Event>) {
    let cluster = Cluster::start(&CAST, &[]).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "w").await;
    let mut events = advance(&mut world, &id, advance_request::Until::Turns(2)).await;
    if whisper {
        let event = intervene(
            &cluster,
            &id,
            Intervention::Whisper(Whisper {
                character: "John Watson".into(),
                text: format!("You recall that Sherlock Holmes keeps a violin. {WHISPER_CANARY}"),
            }),
        )
        .await;
        events.push(event);
    }
    events.extend(advance(&mut world, &id, advance_request::Until::ScriptEnd(true)).await);
    (cluster, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whisper_reaches_one_character_and_leaves_every_other_byte_identical() {
    let (plain, plain_events) = story(false).await;
    let (whispered, events) = story(true).await;

    let whisper: Vec<&Event> = events.iter().filter(|e| e.director).collect();
    assert_eq!(whisper.len(), 1, "one director's event is logged");
    assert_eq!(
        whisper[0].perceivers,
        ["watson"],
        "only Watson perceives it"
    );
    assert_eq!(
        events.len(),
        plain_events.len() + 1,
        "the whisper is one event more"
    );
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());

    let before = memories_and_prompts(&plain, "w").await;
    let after = memories_and_prompts(&whispered, "w").await;
    for ((character, shard, prompts), (_, shard_then, prompts_then)) in after.iter().zip(&before) {
        if character == "watson" {
            assert!(shard.contains(WHISPER_CANARY), "Watson's shard holds it");
            assert!(
                prompts.iter().any(|p| p.contains(WHISPER_CANARY)),
                "Watson's prompts recall it"
            );
            // Watson meets Holmes only in the second scene: the whisper named him,
            // but Watson's copy shows him as Watson saw him then.
            let copy = shard
                .lines()
                .find(|line| line.contains(WHISPER_CANARY))
                .unwrap_or_default();
            assert!(!copy.contains("Sherlock Holmes"), "{copy}");
            continue;
        }
        assert!(!shard.contains(WHISPER_CANARY), "{character}'s shard");
        assert_eq!(shard, shard_then, "{character}'s shard is unchanged");
        assert_eq!(prompts, prompts_then, "{character}'s prompts are unchanged");
    }

    // A point of view shows the whisper to Watson alone.
    for (character, sees) in [("watson", true), ("holmes", false), ("stamford", false)] {
        let shown = replay_as(&mut whispered.world().await, "w", character).await;
        assert_eq!(
            shown.iter().any(|e| e.text.contains(WHISPER_CANARY)),
            sees,
            "{character}'s point of view"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_narration_reaches_those_present_and_a_revelation_those_named() {
    let cluster = Cluster::start(&CAST, &[]).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "w").await;
    advance(&mut world, &id, advance_request::Until::Turns(1)).await;
    let info = world_info(&mut world, &id).await;
    let mut present: Vec<String> = info
        .characters
        .iter()
        .filter(|c| c.location == "criterion")
        .map(|c| c.id.clone())
        .collect();
    present.sort();
    assert_eq!(present, ["stamford", "watson"], "the first scene's cast");

    let narration = intervene(
        &cluster,
        &id,
        Intervention::Narrate(Narrate {
            location: "The Criterion bar".into(),
            text: "A glass shatters behind the bar. NARRATION-CANARY-5521".into(),
        }),
    )
    .await;
    assert!(narration.director);
    assert_eq!(narration.perceivers, present, "everyone there, no one else");
    let revelation = intervene(
        &cluster,
        &id,
        Intervention::Reveal(Reveal {
            characters: vec!["holmes".into(), "Lestrade".into()],
            text: "A telegram arrives for both. REVEAL-CANARY-8802".into(),
        }),
    )
    .await;
    assert_eq!(revelation.perceivers, ["holmes", "lestrade"]);
    assert_eq!(revelation.seq, narration.seq + 1, "each is the next event");

    for character in CAST {
        let shard = cluster.shard_text(&id, character).await;
        let heard = present.iter().any(|p| p == character);
        let told = ["holmes", "lestrade"].contains(&character);
        assert_eq!(
            shard.contains("NARRATION-CANARY-5521"),
            heard,
            "{character}"
        );
        assert_eq!(shard.contains("REVEAL-CANARY-8802"), told, "{character}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interventions_that_cannot_be_carried_out_are_refused_and_log_nothing() {
    let cluster = Cluster::start(&CAST, &[]).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "w").await;
    let request = |intervention: Option<Intervention>| InterveneRequest {
        world_id: id.clone(),
        intervention,
    };
    let whisper = |character: &str, text: &str| {
        Some(Intervention::Whisper(Whisper {
            character: character.into(),
            text: text.into(),
        }))
    };
    let code = tonic::Code::InvalidArgument;
    assert_refused(
        world.intervene(request(None)).await,
        code,
        "intervention is required",
    );
    assert_refused(
        world.intervene(request(whisper("watson", "  "))).await,
        code,
        "needs a text",
    );
    assert_refused(
        world.intervene(request(whisper("", "hello"))).await,
        code,
        "whisper.character is required",
    );
    assert_refused(
        world
            .intervene(request(whisper("watson", &"x".repeat(5_000))))
            .await,
        code,
        "at most 4000 characters",
    );
    assert_refused(
        world
            .intervene(request(whisper(&"moriarty".repeat(100), "hello")))
            .await,
        tonic::Code::NotFound,
        "has no character",
    );
    assert_refused(
        world
            .intervene(request(Some(Intervention::Narrate(Narrate {
                location: "the moon".into(),
                text: "hello".into(),
            }))))
            .await,
        code,
        "has no location",
    );
    // A script's characters come in through its scenes.
    assert_refused(
        world
            .intervene(request(Some(Intervention::BringIn(BringIn {
                character: "watson".into(),
                ..BringIn::default()
            }))))
            .await,
        code,
        "plays a script",
    );
    let info = world_info(&mut world, &id).await;
    assert_eq!(info.next_seq, 1, "nothing was logged");

    advance(&mut world, &id, advance_request::Until::ScriptEnd(true)).await;
    assert_refused(
        world
            .intervene(request(whisper("watson", "too late")))
            .await,
        tonic::Code::FailedPrecondition,
        "finished its story",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offstage_character_enters_when_the_director_brings_it_in() {
    use dramatis_proto::v1::{CreateWorldRequest, create_world_request::Source};
    let cast = ["ada", "coyle", "tom", "varga"];
    let cluster = Cluster::start(&cast, &[]).await;
    let mut world = cluster.world().await;
    let path = dramatis_tests::scenarios_dir().join("lamplighters-ledger/scenario.toml");
    let scenario = dramatis_scenario::Scenario::load(&path).expect("scenario");
    let mut spec = dramatis_scenario::sandbox::scenario_to_spec(&scenario).expect("open");
    spec.characters
        .iter_mut()
        .find(|c| c.id == "tom")
        .expect("tom")
        .offstage = true;
    world
        .create_world(CreateWorldRequest {
            source: Some(Source::Sandbox(spec)),
            world_id: "stage".into(),
            ..Default::default()
        })
        .await
        .expect("created");
    let place_of = |info: &dramatis_proto::v1::WorldInfo, who: &str| {
        info.characters
            .iter()
            .find(|c| c.id == who)
            .map(|c| c.location.clone())
            .expect("in the cast")
    };
    assert_eq!(place_of(&world_info(&mut world, "stage").await, "tom"), "");

    // Offstage, Tom perceives nothing and never acts.
    advance(&mut world, "stage", advance_request::Until::SceneEnd(true)).await;
    let before = replay_as(&mut world, "stage", "").await;
    assert!(!before.is_empty());
    assert!(
        before
            .iter()
            .all(|e| e.speaker != "tom" && !e.perceivers.iter().any(|p| p == "tom"))
    );
    assert!(replay_as(&mut world, "stage", "tom").await.is_empty());

    let info = world_info(&mut world, "stage").await;
    let there: Vec<String> = info
        .characters
        .iter()
        .filter(|c| c.location == "gasworks-lane")
        .map(|c| c.id.clone())
        .collect();
    let entrance = "A thin boy slips in out of the fog.";
    let bring_in = |location: &str| {
        Intervention::BringIn(BringIn {
            character: "tom".into(),
            location: location.into(),
            text: entrance.into(),
        })
    };
    let event = intervene(&cluster, "stage", bring_in("Gasworks Lane")).await;
    assert!(event.director);
    assert_eq!(
        (
            event.kind(),
            event.speaker.as_str(),
            event.location.as_str()
        ),
        (EventKind::Movement, "tom", "gasworks-lane")
    );
    assert_eq!(event.text, entrance);
    let mut seen_by = event.perceivers.clone();
    seen_by.sort();
    let mut expected = there.clone();
    expected.push("tom".into());
    expected.sort();
    assert_eq!(seen_by, expected, "those at Gasworks Lane and Tom");
    assert_eq!(
        place_of(&world_info(&mut world, "stage").await, "tom"),
        "gasworks-lane"
    );
    assert_refused(
        world
            .intervene(InterveneRequest {
                world_id: "stage".into(),
                intervention: Some(bring_in("")),
            })
            .await,
        tonic::Code::FailedPrecondition,
        "in the story already",
    );

    // From then on he is in the story: he perceives and acts.
    let rest = advance(&mut world, "stage", advance_request::Until::ScriptEnd(true)).await;
    assert!(rest.iter().any(|e| e.speaker == "tom" && e.turn > 0));
    let his = replay_as(&mut world, "stage", "tom").await;
    assert_eq!(his.first().map(|e| e.seq), Some(event.seq));
    assert!(his.len() > 2);
}
