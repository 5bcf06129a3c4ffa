//! The director's events (`World.Intervene`) on the shipped scenario, over loopback with
//! the scripted model: each reaches exactly those who perceive it, and nothing of a
//! whisper reaches anyone else's shard or prompts.

use dramatis_proto::v1::{
    BringIn, Event, EventKind, InterveneRequest, Narrate, Reveal, Whisper, advance_request,
    intervene_request::Intervention,
};
use std::sync::Arc;

use dramatis_embed::FakeEmbedder;
use dramatis_llm::{RoleModels, ScriptedModel};
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
/// after two turns when `whisper` is set, run to its end. Its scripted model numbers
/// lines by call, not by prompt: Watson's prompts change with the whisper, and a model
/// that answered them otherwise would change what everyone hears from him; what is
/// compared is what reaches the others besides his words.
async fn story(whisper: bool) -> (Cluster, Vec<Event>) {
    let cluster =
        Cluster::start_configured(&CAST, &[], Arc::new(FakeEmbedder::new(64)), |options| {
            options.models =
                RoleModels::uniform(Arc::new(ScriptedModel::default().numbered_by_call()));
        })
        .await;
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
    let (cluster, mut world) = ledger_with_tom("stage", |tom| tom.offstage = true).await;
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
            newcomer: None,
            allow_interview_only: false,
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

const PROFILE_CANARY: &str = "PROFILE-CANARY-6083";

/// Agnes Pell, new to the Lamplighter's Ledger, as the director gives her.
fn agnes() -> dramatis_proto::v1::SandboxCharacter {
    dramatis_proto::v1::SandboxCharacter {
        id: "agnes".into(),
        name: "Agnes Pell".into(),
        aliases: vec!["Aggie".into()],
        profile: format!(
            "A night-soil carter who hears everything said on the lanes. {PROFILE_CANARY}"
        ),
        known_as: "a carter with a lantern on her cart".into(),
        ..Default::default()
    }
}

/// The director brings in a character new to the story: refused with the field for a
/// wrong profile, then in the cast (its agent holding its profile and nothing else),
/// seen by those there as they see it (a live point of view watched since before it
/// joined included), acting, still there after the world service restarts, and in a
/// fork after its entrance but not in one from before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_character_new_to_the_story_joins_its_cast_known_only_as_seen() {
    use dramatis_proto::v1::{WatchRequest, watch_response};
    let others = ["ada", "coyle", "tom", "varga"];
    let mut cluster = Cluster::start(&["ada", "coyle", "tom", "varga", "agnes"], &[]).await;
    let mut world = cluster.world().await;
    let id = cluster.create("lamplighters-ledger", "lanes").await;
    advance(&mut world, &id, advance_request::Until::SceneEnd(true)).await;
    let joined_after = world_info(&mut world, &id).await.next_seq - 1;

    refuses_wrong_newcomers(&mut world, &id).await;
    let info = world_info(&mut world, &id).await;
    assert_eq!(info.next_seq - 1, joined_after, "nothing was logged");
    assert!(info.characters.iter().all(|c| c.id != "agnes"));

    // Ada, at Gasworks Lane, watched live since before Agnes joined.
    let mut ada_live = world
        .watch(WatchRequest {
            world_id: id.clone(),
            from_seq: joined_after + 1,
            no_follow: false,
            pov: "ada".into(),
        })
        .await
        .expect("watch as Ada")
        .into_inner();
    let there: Vec<String> = info
        .characters
        .iter()
        .filter(|c| c.location == "gasworks-lane")
        .map(|c| c.id.clone())
        .collect();
    assert!(there.iter().any(|c| c == "ada"), "{there:?}");

    let event = world
        .intervene(InterveneRequest {
            world_id: id.clone(),
            intervention: Some(Intervention::BringIn(BringIn {
                location: "gasworks-lane".into(),
                newcomer: Some(dramatis_proto::v1::SandboxCharacter {
                    // Named as a person would name it, not by id.
                    location: "GASWORKS LANE".into(),
                    ..agnes()
                }),
                ..BringIn::default()
            })),
        })
        .await
        .expect("brought in")
        .into_inner()
        .event
        .expect("the logged event");
    assert_eq!(
        (
            event.kind(),
            event.speaker.as_str(),
            event.location.as_str(),
            event.director
        ),
        (EventKind::Movement, "agnes", "gasworks-lane", true)
    );
    assert_eq!(event.text, "Agnes Pell arrives at Gasworks Lane.");
    let mut seen_by = event.perceivers.clone();
    seen_by.sort();
    let mut expected = there;
    expected.push("agnes".into());
    expected.sort();
    assert_eq!(seen_by, expected, "those at Gasworks Lane and Agnes");
    let agnes_info = world_info(&mut world, &id)
        .await
        .characters
        .into_iter()
        .find(|c| c.id == "agnes")
        .expect("in the cast");
    assert_eq!(agnes_info.location, "gasworks-lane");

    let seen = loop {
        let item = ada_live.message().await.expect("watch").expect("an item");
        if let Some(watch_response::Item::Event(e)) = item.item
            && e.seq == event.seq
        {
            break e;
        }
    };
    assert_eq!(
        seen.text,
        "A carter with a lantern on her cart arrives at Gasworks Lane."
    );
    assert_ne!(seen.speaker, "agnes", "her id is a name too");

    // She acts, and nothing of her profile or name reaches anyone else.
    let rest = advance(&mut world, &id, advance_request::Until::ScriptEnd(true)).await;
    assert!(rest.iter().any(|e| e.speaker == "agnes" && e.turn > 0));
    her_profile_and_name_are_hers_alone(&cluster, &id, &others).await;
    let ada_view = replay_as(&mut world, &id, "ada").await;
    assert!(ada_view.iter().all(|e| !e.text.contains("Agnes")));

    asked_as_of_before_she_joined_she_is_refused(&mut world, &id, joined_after, event.seq).await;

    forks_and_restarts_keep_her_after_her_entrance_only(&mut cluster, &id, joined_after, event.seq)
        .await;
}

/// Asked as of before she joined, the newcomer is refused: she was not in the story;
/// as of her entrance (event `entered`) she answers.
async fn asked_as_of_before_she_joined_she_is_refused(
    world: &mut dramatis_proto::v1::world_client::WorldClient<tonic::transport::Channel>,
    id: &str,
    joined_after: u64,
    entered: u64,
) {
    let ask_as_of = |seq: u64| dramatis_proto::v1::AskRequest {
        world_id: id.to_owned(),
        character: "agnes".into(),
        question: "Where are you?".into(),
        recall_only: true,
        as_of: Some(dramatis_proto::v1::AsOf {
            point: Some(dramatis_proto::v1::as_of::Point::Seq(seq)),
        }),
        ..dramatis_proto::v1::AskRequest::default()
    };
    for before in [1, joined_after] {
        let refused = world
            .ask(ask_as_of(before))
            .await
            .expect_err("before she joined");
        assert_eq!(refused.code(), tonic::Code::OutOfRange, "{refused:?}");
        assert!(
            refused
                .message()
                .contains(&format!("joined the story after event {joined_after}")),
            "{refused:?}"
        );
    }
    let answer = world
        .ask(ask_as_of(entered))
        .await
        .expect("as of her entrance")
        .into_inner();
    assert_eq!(answer.as_of_seq, Some(entered));
}

/// Bringing in a newcomer with a wrong profile is refused, naming the field.
async fn refuses_wrong_newcomers(
    world: &mut dramatis_proto::v1::world_client::WorldClient<tonic::transport::Channel>,
    id: &str,
) {
    let bring_in =
        |newcomer: dramatis_proto::v1::SandboxCharacter, character: &str| InterveneRequest {
            world_id: id.to_owned(),
            intervention: Some(Intervention::BringIn(BringIn {
                character: character.into(),
                location: "Gasworks Lane".into(),
                text: String::new(),
                newcomer: Some(newcomer),
                allow_interview_only: false,
            })),
        };
    let code = tonic::Code::InvalidArgument;
    let wrong = [
        (
            dramatis_proto::v1::SandboxCharacter {
                id: "tom".into(),
                ..agnes()
            },
            "",
            "bring_in.newcomer.id: duplicate character id",
        ),
        (
            dramatis_proto::v1::SandboxCharacter {
                profile: " ".into(),
                ..agnes()
            },
            "",
            "bring_in.newcomer.profile: must not be empty",
        ),
        (
            dramatis_proto::v1::SandboxCharacter {
                known_as: "Aggie with her cart".into(),
                ..agnes()
            },
            "",
            "bring_in.newcomer.known_as: names the character",
        ),
        (
            dramatis_proto::v1::SandboxCharacter {
                location: "the-moon".into(),
                ..agnes()
            },
            "",
            "bring_in.newcomer.location",
        ),
        (agnes(), "tom", "is not the newcomer's id"),
    ];
    for (newcomer, character, why) in wrong {
        assert_refused(
            world.intervene(bring_in(newcomer, character)).await,
            code,
            why,
        );
    }
}

/// After its entrance (event `entered`) a newcomer who joined after event
/// `joined_after` is in the world a restarted service rebuilds and in a fork after
/// its entrance, and in no part of a fork from before it joined.
async fn forks_and_restarts_keep_her_after_her_entrance_only(
    cluster: &mut Cluster,
    id: &str,
    joined_after: u64,
    entered: u64,
) {
    use dramatis_proto::v1::ForkRequest;
    // A restarted service rebuilds her from the record.
    cluster.restart_world().await;
    let mut world = cluster.world().await;
    let after = world_info(&mut world, id).await;
    assert!(after.characters.iter().any(|c| c.id == "agnes"));

    // A fork from before she joined holds nothing of her; one after her entrance does.
    let fork = |at_seq: u64, new_world_id: &str| ForkRequest {
        world_id: id.to_owned(),
        at_seq,
        new_world_id: new_world_id.into(),
    };
    let before = world
        .fork(fork(joined_after, "before"))
        .await
        .expect("fork before")
        .into_inner();
    assert!(before.characters.iter().all(|c| c.id != "agnes"));
    let later = world
        .fork(fork(entered, "later"))
        .await
        .expect("fork after")
        .into_inner();
    assert!(later.characters.iter().any(|c| c.id == "agnes"));
    cluster.restart_world().await;
    let mut world = cluster.world().await;
    let before = world_info(&mut world, "before").await;
    assert!(before.characters.iter().all(|c| c.id != "agnes"));
    let ended = advance(
        &mut world,
        "before",
        advance_request::Until::ScriptEnd(true),
    )
    .await;
    assert!(ended.iter().all(|e| e.speaker != "agnes"));
}

/// Agnes's agent holds her profile (and no fact or memory); no other character's shard
/// or prompts hold it, her name, her alias or her id.
async fn her_profile_and_name_are_hers_alone(cluster: &Cluster, id: &str, others: &[&str]) {
    let her = cluster.snapshot(id, "agnes").await;
    let profile = her.profile.expect("her profile");
    assert_eq!(
        (profile.name.as_str(), profile.aliases.as_slice()),
        ("Agnes Pell", &["Aggie".to_owned()][..])
    );
    assert!(profile.profile.contains(PROFILE_CANARY));
    assert!(profile.knowledge.is_empty() && profile.memories.is_empty());
    let prompts: Vec<String> = cluster
        .audit(id, "agnes")
        .await
        .into_iter()
        .flat_map(|audit| audit.prompts)
        .map(|record| record.prompt)
        .collect();
    assert!(prompts.iter().any(|p| p.contains(PROFILE_CANARY)));
    for character in others {
        let character = *character;
        let shard = format!("{:?}", cluster.snapshot(id, character).await.memory);
        let prompts = format!("{:?}", cluster.audit(id, character).await);
        for secret in [PROFILE_CANARY, "Agnes", "Aggie", "\"agnes\""] {
            assert!(!shard.contains(secret), "{secret} in {character}'s shard");
            assert!(
                !prompts.contains(secret),
                "{secret} in {character}'s prompts"
            );
        }
    }
}

/// A character its sandbox marks interview-only (here Tom, who alone knows where the
/// packet is) has an agent that answers from its shard, but is placed nowhere, never
/// acts or perceives, is refused by a director who brings it in without the flag, stays
/// off the stage in a fork, and enters only when the director sets the flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interview_only_character_is_asked_but_never_staged() {
    use dramatis_proto::v1::ForkRequest;
    let (cluster, mut world) = ledger_with_tom("ghost", |tom| tom.interview_only = true).await;
    let place_of = |info: &dramatis_proto::v1::WorldInfo| {
        info.characters
            .iter()
            .find(|c| c.id == "tom")
            .map(|c| c.location.clone())
            .expect("Tom is in the cast, with an agent")
    };
    assert_eq!(place_of(&world_info(&mut world, "ghost").await), "");

    // Never scheduled, never perceiving: a whole scene goes by without him.
    let played = advance(&mut world, "ghost", advance_request::Until::SceneEnd(true)).await;
    assert!(played.iter().any(|e| e.turn > 0), "the others act");
    let never_there = |events: &[Event]| {
        events
            .iter()
            .all(|e| e.speaker != "tom" && !e.perceivers.iter().any(|p| p == "tom"))
    };
    assert!(never_there(&replay_as(&mut world, "ghost", "").await));

    // Asked, he answers from what his shard holds.
    let answer = cluster
        .ask("ghost", "tom", "Where did you hide the packet?", true)
        .await;
    assert!(
        answer
            .recalled
            .iter()
            .any(|m| m.text.contains("rope locker")),
        "his own fact comes to mind: {:?}",
        answer.recalled
    );

    // A director who brings him in without the flag is refused, and nothing is logged.
    let before = replay_as(&mut world, "ghost", "").await.len();
    let bring_in = |allow_interview_only: bool| InterveneRequest {
        world_id: "ghost".into(),
        intervention: Some(Intervention::BringIn(BringIn {
            character: "tom".into(),
            location: "gasworks-lane".into(),
            allow_interview_only,
            ..BringIn::default()
        })),
    };
    assert_refused(
        world.intervene(bring_in(false)).await,
        tonic::Code::FailedPrecondition,
        "interview-only",
    );
    assert_eq!(replay_as(&mut world, "ghost", "").await.len(), before);

    // A fork holds him as its parent does: asked, never staged.
    let last = replay_as(&mut world, "ghost", "").await;
    let at_seq = last.last().expect("events").seq;
    let fork = world
        .fork(ForkRequest {
            world_id: "ghost".into(),
            at_seq,
            new_world_id: "ghost-fork".into(),
        })
        .await
        .expect("fork")
        .into_inner();
    assert_eq!(place_of(&fork), "");
    advance(
        &mut world,
        "ghost-fork",
        advance_request::Until::SceneEnd(true),
    )
    .await;
    assert!(never_there(&replay_as(&mut world, "ghost-fork", "").await));

    // With the flag, the director gives him the stage.
    let entered = world
        .intervene(bring_in(true))
        .await
        .expect("brought in with the flag")
        .into_inner()
        .event
        .expect("the entrance");
    assert_eq!(
        (entered.kind(), entered.speaker.as_str()),
        (EventKind::Movement, "tom")
    );
    assert_eq!(
        place_of(&world_info(&mut world, "ghost").await),
        "gasworks-lane"
    );
}

/// A cluster playing the Lamplighter's Ledger as sandbox world `id`, with Tom as
/// `mark` leaves him, and a client of its world service.
async fn ledger_with_tom(
    id: &str,
    mark: impl FnOnce(&mut dramatis_proto::v1::SandboxCharacter),
) -> (
    Cluster,
    dramatis_proto::v1::world_client::WorldClient<tonic::transport::Channel>,
) {
    use dramatis_proto::v1::{CreateWorldRequest, create_world_request::Source};
    let cast = ["ada", "coyle", "tom", "varga"];
    let cluster = Cluster::start(&cast, &[]).await;
    let mut world = cluster.world().await;
    let path = dramatis_tests::scenarios_dir().join("lamplighters-ledger/scenario.toml");
    let scenario = dramatis_scenario::Scenario::load(&path).expect("scenario");
    let mut spec = dramatis_scenario::sandbox::scenario_to_spec(&scenario).expect("open");
    mark(
        spec.characters
            .iter_mut()
            .find(|c| c.id == "tom")
            .expect("tom"),
    );
    world
        .create_world(CreateWorldRequest {
            source: Some(Source::Sandbox(spec)),
            world_id: id.into(),
            ..Default::default()
        })
        .await
        .expect("created");
    (cluster, world)
}
