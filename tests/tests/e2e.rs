//! The shipped scenario end to end over loopback: a real world service, one real agent
//! service per character, the scripted model.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test tells one story from start to end; cut up, it would hide its order"
)]

use std::collections::BTreeMap;

use dramatis_llm::ScriptRule;
use dramatis_proto::v1::world_client::WorldClient;
use dramatis_proto::v1::{
    AsOf, AskRequest, Event, EventKind, GetWorldRequest, WatchRequest, advance_request, as_of,
    watch_response,
};
use dramatis_tests::{Cluster, advance, test_embedder};
use tonic::transport::Channel;

const CAST: [&str; 4] = ["holmes", "lestrade", "stamford", "watson"];
const LAB_CANARY: &str = "CANARY-AFGHANISTAN-7731";
const THOUGHT_CANARY: &str = "THOUGHT-CANARY-5120";
const CRITERION_CANARY: &str = "CANARY-CRITERION-4402";

fn rules() -> Vec<ScriptRule> {
    vec![
        ScriptRule {
            when: vec![
                "Character: Sherlock Holmes".into(),
                "perfected your test".into(),
            ],
            reply: format!(
                r#"{{"kind":"speech","target":"watson","text":"You have been in Afghanistan, I perceive. {LAB_CANARY}","thought":"{THOUGHT_CANARY} tan stops at the wrists","destination":""}}"#
            ),
        },
        ScriptRule {
            when: vec![
                "Character: Stamford".into(),
                "spotted your old chief".into(),
            ],
            reply: format!(
                r#"{{"kind":"speech","target":"watson","text":"The fellow at the lab beats corpses with a stick! {CRITERION_CANARY}","thought":"","destination":""}}"#
            ),
        },
    ]
}

/// Events (and the streamed text per seq) from a watcher, up to `last` inclusive.
async fn collect(
    mut stream: tonic::Streaming<dramatis_proto::v1::WatchResponse>,
    mut last: tokio::sync::watch::Receiver<u64>,
) -> (Vec<Event>, BTreeMap<u64, String>) {
    let mut events = Vec::new();
    let mut tokens: BTreeMap<u64, String> = BTreeMap::new();
    loop {
        if events
            .last()
            .is_some_and(|e: &Event| e.seq >= *last.borrow())
        {
            return (events, tokens);
        }
        tokio::select! {
            message = stream.message() => match message.expect("stream healthy") {
                Some(item) => match item.item {
                    Some(watch_response::Item::Event(e)) => events.push(e),
                    Some(watch_response::Item::Token(t)) => {
                        tokens.entry(t.seq).or_default().push_str(&t.text);
                    }
                    None => {}
                },
                None => return (events, tokens),
            },
            _ = last.changed() => {}
        }
    }
}

async fn watch(
    world: &mut WorldClient<Channel>,
    id: &str,
    from_seq: u64,
) -> tonic::Streaming<dramatis_proto::v1::WatchResponse> {
    world
        .watch(WatchRequest {
            world_id: id.into(),
            from_seq,
            no_follow: false,
            pov: String::new(),
        })
        .await
        .expect("watch")
        .into_inner()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_scene_runs_and_all_watchers_get_the_transcript_once_in_order() {
    let cluster = Cluster::start(&CAST, &rules()).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "story").await;
    let (last_tx, last_rx) = tokio::sync::watch::channel(u64::MAX);

    let early = tokio::spawn(collect(watch(&mut world, &id, 1).await, last_rx.clone()));
    let mut produced = advance(&mut world, &id, advance_request::Until::Turns(3)).await;
    // This watcher joins after events exist, and again mid-story from an offset.
    let late = tokio::spawn(collect(watch(&mut world, &id, 0).await, last_rx.clone()));
    let offset = tokio::spawn(collect(watch(&mut world, &id, 5).await, last_rx.clone()));
    produced.extend(advance(&mut world, &id, advance_request::Until::ScriptEnd(true)).await);

    let info = world
        .get_world(GetWorldRequest {
            world_id: id.clone(),
        })
        .await
        .expect("get")
        .into_inner();
    let last = info.next_seq - 1;
    // Watchers may have ended already: Watch closes once the world has finished.
    let _ = last_tx.send(last);
    let (early_events, early_tokens) = early.await.expect("early watcher");
    let (late_events, _) = late.await.expect("late watcher");
    let (offset_events, _) = offset.await.expect("offset watcher");

    let seqs = |events: &[Event]| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(
        seqs(&produced),
        (1..=last).collect::<Vec<_>>(),
        "advance returns every event"
    );
    assert_eq!(early_events, produced, "early watcher sees exactly the log");
    assert_eq!(late_events, produced, "late watcher sees exactly the log");
    assert_eq!(seqs(&offset_events), (5..=last).collect::<Vec<_>>());

    let markers: Vec<(i32, String)> = produced
        .iter()
        .filter(|e| matches!(e.kind(), EventKind::SceneStart | EventKind::SceneEnd))
        .map(|e| (e.kind, e.scene_id.clone()))
        .collect();
    let scenes = [
        "criterion-meeting",
        "laboratory",
        "baker-street-visit",
        "lauriston-gardens",
    ];
    let expected: Vec<(i32, String)> = scenes
        .iter()
        .flat_map(|s| {
            [
                (EventKind::SceneStart as i32, (*s).to_owned()),
                (EventKind::SceneEnd as i32, (*s).to_owned()),
            ]
        })
        .collect();
    assert_eq!(
        markers, expected,
        "all four scenes open and close in script order"
    );
    assert_eq!(
        info.total_turns, 24,
        "each scene runs to its six-turn limit"
    );
    assert_eq!(
        info.status,
        dramatis_proto::v1::WorldStatus::Finished as i32
    );

    // The early watcher saw each line stream word by word before it settled. A whole
    // line the model left without a closing mark settles with a full stop added (the
    // scripted canary lines end with the canary); every other line is the words.
    let lines: Vec<&Event> = produced.iter().filter(|e| e.turn > 0).collect();
    assert_eq!(lines.len(), 24);
    let mut stopped = 0;
    for line in lines {
        let streamed = early_tokens
            .get(&line.seq)
            .unwrap_or_else(|| panic!("no words streamed for event {}", line.seq));
        if *streamed == line.text {
            continue;
        }
        assert_eq!(
            format!("{streamed}."),
            line.text,
            "streamed words of event {} match its text",
            line.seq
        );
        assert!(
            !streamed.ends_with(['.', '!', '?', '…']),
            "only a line without a closing mark gets one: {streamed}"
        );
        stopped += 1;
    }
    assert!(stopped > 0, "the canary lines got their full stops");
}

fn shard_text(snapshot: &dramatis_proto::v1::SnapshotResponse) -> String {
    snapshot
        .memory
        .iter()
        .map(|m| m.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_scenes_never_reach_absent_characters() {
    // The real embedder when set-up fetched it: retrieval is part of what is checked.
    let cluster = Cluster::start_with(&CAST, &rules(), test_embedder()).await;
    private_scenes_stay_private(&cluster, false).await;
}

/// The same isolation with DualMem, MOOM and BOOKMARKS on beside ReverieMem, their model
/// steps on (the scripted model answers them): no module of Lestrade's holds or sends
/// anything of the scenes he missed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_scenes_stay_private_with_every_memory_module_on() {
    let cluster = Cluster::start_configured(&CAST, &rules(), test_embedder(), |options| {
        options.memory_modules = Some(dramatis_memory::modules::ModuleSet::all());
        options.memory_writes = dramatis_character::MemoryWrites::Model;
    })
    .await;
    private_scenes_stay_private(&cluster, true).await;
}

/// The same scenes with every character in one agent process, as the default pool
/// layout hosts them: one embedder, one model client, four shards. Each prompt the
/// shared model received is one character's audited prompt, and none of a character's
/// prompts or memory holds what it did not perceive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_scenes_stay_private_with_every_character_in_one_agent_process() {
    let cluster = Cluster::start_shared(&CAST, &rules(), test_embedder()).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "shared").await;
    advance(&mut world, &id, advance_request::Until::ScriptEnd(true)).await;
    let mut audited: Vec<String> = Vec::new();
    let mut prompts_of = std::collections::BTreeMap::new();
    for character in CAST {
        let audit = cluster.audit(&id, character).await;
        assert_eq!(audit.len(), 1);
        assert_eq!(audit[0].character, character);
        let texts: Vec<String> = audit[0].prompts.iter().map(|p| p.prompt.clone()).collect();
        assert!(!texts.is_empty(), "{character} was prompted");
        audited.extend(texts.iter().cloned());
        prompts_of.insert(character, texts);
    }
    // What the one model received is exactly the characters' audits together: no
    // prompt went out that no character's audit accounts for.
    let mut sent: Vec<String> = cluster
        .agent("holmes")
        .model
        .prompts()
        .iter()
        .map(dramatis_llm::RecordedPrompt::text)
        .collect();
    sent.sort();
    audited.sort();
    assert_eq!(
        sent.len(),
        audited.len(),
        "one audited prompt per prompt sent"
    );
    assert!(sent == audited, "the prompts sent are the audited prompts");

    let never: [(&str, &[&str]); 4] = [
        ("lestrade", &[LAB_CANARY, THOUGHT_CANARY, CRITERION_CANARY]),
        ("holmes", &[CRITERION_CANARY]),
        ("watson", &[THOUGHT_CANARY]),
        ("stamford", &[THOUGHT_CANARY]),
    ];
    for (character, canaries) in never {
        let memory = shard_text(&cluster.snapshot(&id, character).await);
        for canary in canaries {
            assert!(!memory.contains(canary), "{canary} in {character}'s shard");
            for prompt in &prompts_of[character] {
                assert!(
                    !prompt.contains(canary),
                    "{canary} in a prompt of {character}'s"
                );
            }
        }
    }
    // Those present did perceive the lab line, in memory and in their prompts.
    for present in ["watson", "stamford"] {
        let memory = shard_text(&cluster.snapshot(&id, present).await);
        assert!(memory.contains(LAB_CANARY), "{present} heard Holmes");
        assert!(prompts_of[present].iter().any(|p| p.contains(LAB_CANARY)));
    }
}

async fn private_scenes_stay_private(cluster: &Cluster, modules: bool) {
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "isolation").await;
    let events = advance(&mut world, &id, advance_request::Until::ScriptEnd(true)).await;

    // The canary lines happened, where the script put them.
    let lab_line = events
        .iter()
        .find(|e| e.text.contains(LAB_CANARY))
        .expect("Holmes spoke the lab canary");
    assert_eq!(lab_line.scene_id, "laboratory");
    assert_eq!(lab_line.perceivers, ["holmes", "stamford", "watson"]);
    assert!(
        lab_line.thought.contains(THOUGHT_CANARY),
        "the log keeps the thought"
    );

    // Lestrade was at Scotland Yard for both private scenes: nothing of them reached him.
    let lestrade = cluster.snapshot(&id, "lestrade").await;
    let lestrade_memory = shard_text(&lestrade);
    for canary in [LAB_CANARY, THOUGHT_CANARY, CRITERION_CANARY] {
        assert!(
            !lestrade_memory.contains(canary),
            "{canary} leaked into Lestrade's shard"
        );
    }
    let lestrade_prompts = cluster.agent("lestrade").model.prompts();
    if !modules {
        assert_eq!(
            lestrade_prompts.len(),
            4,
            "Lestrade acts twice in each of scenes three and four"
        );
    }
    for prompt in &lestrade_prompts {
        let text = prompt.text();
        for canary in [LAB_CANARY, THOUGHT_CANARY, CRITERION_CANARY] {
            assert!(
                !text.contains(canary),
                "{canary} leaked into a prompt of Lestrade's"
            );
        }
    }
    // Holmes was not at the Criterion.
    let holmes = cluster.snapshot(&id, "holmes").await;
    assert!(!shard_text(&holmes).contains(CRITERION_CANARY));
    assert!(
        cluster
            .agent("holmes")
            .model
            .prompts()
            .iter()
            .all(|p| !p.text().contains(CRITERION_CANARY))
    );

    // Those present did perceive it — the line, not Holmes's thought.
    for present in ["watson", "stamford"] {
        let memory = shard_text(&cluster.snapshot(&id, present).await);
        assert!(memory.contains(LAB_CANARY), "{present} heard Holmes");
        assert!(
            !memory.contains(THOUGHT_CANARY),
            "{present} cannot hear Holmes think"
        );
        let prompts = cluster.agent(present).model.prompts();
        assert!(prompts.iter().any(|p| p.text().contains(LAB_CANARY)));
        assert!(prompts.iter().all(|p| !p.text().contains(THOUGHT_CANARY)));
    }
    assert!(
        shard_text(&holmes).contains(THOUGHT_CANARY),
        "Holmes remembers his own thought"
    );
    let watson = shard_text(&cluster.snapshot(&id, "watson").await);
    assert!(
        watson.contains(CRITERION_CANARY),
        "Watson heard Stamford at the Criterion"
    );

    // The audit shows every prompt Lestrade's agent sent, built only from his shard.
    let audit = cluster.audit(&id, "the inspector").await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].character, "lestrade");
    assert_eq!(
        audit[0].prompts.len(),
        lestrade_prompts.len(),
        "one record per prompt sent"
    );
    let his_items: Vec<&str> = lestrade.memory.iter().map(|m| m.id.as_str()).collect();
    for record in &audit[0].prompts {
        assert_eq!(record.character_id, "lestrade");
        if record.purpose == "act" {
            assert!(!record.items.is_empty());
        }
        for item in &record.items {
            assert!(
                his_items.contains(&item.id.as_str()),
                "{} is not in his shard",
                item.id
            );
            let layers = ["episodic", "semantic", "personality", "perceived"];
            let module_item = ["dualmem.", "moom.", "bookmarks."]
                .iter()
                .any(|m| item.layer.starts_with(m));
            assert!(
                layers.contains(&item.layer.as_str()) || (modules && module_item),
                "{}",
                item.layer
            );
            let module = match item.layer.as_str() {
                "perceived" => "scene",
                l if layers.contains(&l) => "reverie",
                l => l.split('.').next().unwrap_or_default(),
            };
            assert_eq!(item.module, module, "{} names its module", item.layer);
        }
        for canary in [LAB_CANARY, THOUGHT_CANARY, CRITERION_CANARY] {
            assert!(
                !record.prompt.contains(canary),
                "{canary} in Lestrade's audit"
            );
        }
    }
    assert_eq!(
        audit[0]
            .prompts
            .iter()
            .map(|p| p.prompt.clone())
            .collect::<Vec<_>>(),
        lestrade_prompts
            .iter()
            .map(|p| p.text())
            .collect::<Vec<_>>(),
        "the audit records exactly what the model received"
    );

    if modules {
        // The modules did contribute: Watson's turns carry items of all three.
        let watson_audit = cluster.audit(&id, "watson").await;
        let used: std::collections::BTreeSet<String> = watson_audit[0]
            .prompts
            .iter()
            .flat_map(|p| p.items.iter().map(|i| i.module.clone()))
            .collect();
        for module in ["reverie", "scene", "dualmem", "moom", "bookmarks"] {
            assert!(
                used.contains(module),
                "no {module} item in Watson's prompts: {used:?}"
            );
        }
        let stores: std::collections::BTreeSet<String> = cluster
            .snapshot(&id, "watson")
            .await
            .memory
            .iter()
            .map(|m| m.source.clone())
            .collect();
        // Recall only: what the lab question brings to mind, by module, without an answer.
        let question = "What were you told about Afghanistan in the laboratory?";
        for (who, knows) in [("watson", true), ("lestrade", false)] {
            let view = cluster.ask(&id, who, question, true).await;
            assert!(view.answer.is_empty());
            let hits: Vec<&str> = view
                .recalled
                .iter()
                .filter(|r| r.text.contains(LAB_CANARY))
                .map(|r| r.module.as_str())
                .collect();
            assert_eq!(!hits.is_empty(), knows, "{who}: {hits:?}");
            if knows {
                assert!(
                    hits.contains(&"dualmem"),
                    "DualMem's facts hold the line: {hits:?}"
                );
            }
        }
        for store in [
            "dualmem.fact",
            "moom.plot-1",
            "bookmarks.bookmark",
            "modules.storyline",
        ] {
            assert!(
                stores.contains(store),
                "Watson keeps no {store}: {stores:?}"
            );
        }
    }

    // Long-term memory: the scene became Watson's episodic memory and facts whose
    // visibility is exactly who was there; Lestrade has neither.
    let watson_snapshot = cluster.snapshot(&id, "watson").await;
    let layer_has = |snap: &dramatis_proto::v1::SnapshotResponse, layer: &str, text: &str| {
        snap.memory
            .iter()
            .any(|m| m.source == layer && m.text.contains(text))
    };
    if modules {
        // Model-written memory rewrote the digests in the scripted model's words; the
        // modules' stores hold the lines themselves.
        assert!(layer_has(&watson_snapshot, "dualmem.fact", LAB_CANARY));
        assert!(layer_has(&watson_snapshot, "moom.plot-1", LAB_CANARY));
        assert!(layer_has(
            &watson_snapshot,
            "dualmem.fact",
            CRITERION_CANARY
        ));
    } else {
        assert!(layer_has(&watson_snapshot, "episodic", LAB_CANARY));
        assert!(layer_has(&watson_snapshot, "episodic", CRITERION_CANARY));
    }
    assert!(layer_has(&watson_snapshot, "semantic", LAB_CANARY));
    let stores: Vec<String> = if modules {
        [
            "episodic",
            "semantic",
            "personality",
            "dualmem.fact",
            "dualmem.insight",
            "moom.plot-1",
            "moom.plot-2",
            "moom.persona",
            "bookmarks.bookmark",
            "modules.storyline",
        ]
        .map(str::to_owned)
        .to_vec()
    } else {
        ["episodic", "semantic", "personality"]
            .map(str::to_owned)
            .to_vec()
    };
    for layer in &stores {
        for canary in [LAB_CANARY, THOUGHT_CANARY, CRITERION_CANARY] {
            assert!(
                !layer_has(&lestrade, layer, canary),
                "{canary} in his {layer} layer"
            );
        }
    }

    // Retrieval: asked straight about the lab, Watson recalls the line and Lestrade
    // cannot surface it however relevant it would be.
    let question = "What were you told about Afghanistan in the laboratory?";
    for (who, knows) in [("watson", true), ("lestrade", false)] {
        let answer = cluster.ask(&id, who, question, false).await;
        let prompts = cluster.agent(who).model.prompts();
        let sent: String = prompts
            .iter()
            .rev()
            .take_while(|p| !p.text().contains("Character:") || p.text().contains(question))
            .map(|p| p.text())
            .collect();
        assert_eq!(sent.contains(LAB_CANARY), knows, "{who}: {sent}");
        assert!(!answer.answer.contains(THOUGHT_CANARY));
        if !knows {
            assert!(!answer.answer.contains(LAB_CANARY));
        }
    }

    // Starting knowledge, memories and patterns are per character too.
    assert!(lestrade_memory.contains("Enoch J. Drebber"));
    assert!(
        lestrade_memory.contains("Constable Rance"),
        "his own starting memory"
    );
    assert!(!lestrade_memory.contains("Jezail") && !lestrade_memory.contains("Maiwand"));
    assert!(
        !shard_text(&holmes).contains("Murray my orderly"),
        "Watson's memory stays his"
    );
    assert!(watson.contains("Murray my orderly"));
    assert!(!watson.contains("Enoch J. Drebber"));
    assert!(!shard_text(&holmes).contains("Jezail bullet"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_is_answered_by_the_characters_agent_from_its_own_shard() {
    let rules = vec![ScriptRule {
        when: vec![
            "You are Inspector Lestrade".into(),
            "Question: Who is dead?".into(),
        ],
        reply: "Enoch Drebber, of Cleveland.".into(),
    }];
    let cluster = Cluster::start(&CAST, &rules).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "ask").await;
    let answer = world
        .ask(AskRequest {
            world_id: id.clone(),
            character: "the inspector".into(),
            question: "Who is dead?".into(),
            ..AskRequest::default()
        })
        .await
        .expect("ask")
        .into_inner();
    assert_eq!(
        answer.character, "lestrade",
        "aliases resolve to the character id"
    );
    assert_eq!(answer.answer, "Enoch Drebber, of Cleveland.");
    assert_eq!(answer.usage.map(|u| u.llm_calls), Some(1));
    let prompts = cluster.agent("lestrade").model.prompts();
    assert_eq!(prompts.len(), 1);
    assert!(
        prompts[0].text().contains("Enoch J. Drebber"),
        "the prompt holds his own knowledge"
    );
    assert!(
        cluster.agent("watson").model.prompts().is_empty(),
        "nobody else was asked"
    );
}

/// `Ask` with `as_of` on a played world: at the end of the Criterion (scene 1), Watson
/// has not met Holmes, so nothing of the laboratory comes to his mind; at the end of
/// the laboratory (scene 2, by its id) it does, with Holmes by the description he saw.
/// Before his first scene, Lestrade holds his profile only. Nothing is replayed or
/// changed; a moment not yet logged is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ask_as_of_a_scene_answers_from_what_the_character_held_then() {
    let cluster = Cluster::start(&CAST, &rules()).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "as-of").await;
    let events = advance(&mut world, &id, advance_request::Until::ScriptEnd(true)).await;
    let last_of = |scene: &str| {
        events
            .iter()
            .filter(|e| e.scene_id == scene)
            .map(|e| e.seq)
            .max()
            .expect("scene played")
    };
    let head = events.last().expect("played").seq;
    let recall = |point: Option<as_of::Point>| AskRequest {
        world_id: id.clone(),
        character: "watson".into(),
        question: "What did Sherlock Holmes say to you in the laboratory?".into(),
        recall_only: true,
        as_of: point.map(|point| AsOf { point: Some(point) }),
        ..AskRequest::default()
    };
    let texts = |answer: &dramatis_proto::v1::AskResponse| {
        answer
            .recalled
            .iter()
            .map(|item| item.text.clone())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let now = world.ask(recall(None)).await.expect("ask").into_inner();
    // Now, Watson knows Holmes by name and remembers the laboratory.
    let holmes_said = "Sherlock Holmes said";
    assert!(texts(&now).contains(holmes_said), "{}", texts(&now));
    assert_eq!(now.as_of_seq, None);
    let criterion = world
        .ask(recall(Some(as_of::Point::Scene("1".into()))))
        .await
        .expect("ask as of scene 1")
        .into_inner();
    assert_eq!(criterion.as_of_seq, Some(last_of("criterion-meeting")));
    for later in [LAB_CANARY, "Holmes"] {
        assert!(!texts(&criterion).contains(later), "{}", texts(&criterion));
    }
    // At the laboratory's end he remembers it, and the man he met there by how he saw
    // him then: the name came later.
    let lab = world
        .ask(recall(Some(as_of::Point::Scene("laboratory".into()))))
        .await
        .expect("ask as of the laboratory")
        .into_inner();
    assert_eq!(lab.as_of_seq, Some(last_of("laboratory")));
    assert!(texts(&lab).contains(LAB_CANARY), "{}", texts(&lab));
    assert!(!texts(&lab).contains(holmes_said), "{}", texts(&lab));

    let refused = world
        .ask(recall(Some(as_of::Point::Seq(head + 1))))
        .await
        .expect_err("a moment not yet played");
    assert_eq!(refused.code(), tonic::Code::OutOfRange, "{refused:?}");
    assert!(refused.message().contains("not yet played"), "{refused:?}");
    // Lestrade comes on in scene 3; as of event 1 he holds his profile only.
    let mut lestrade = recall(Some(as_of::Point::Seq(1)));
    lestrade.character = "lestrade".into();
    let early = world
        .ask(lestrade)
        .await
        .expect("a cast member is in the story from its start")
        .into_inner();
    assert_eq!(early.as_of_seq, Some(1));
    assert!(!texts(&early).contains("said"), "{}", texts(&early));
    let info = world
        .get_world(GetWorldRequest {
            world_id: id.clone(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(info.next_seq, head + 1, "asking logged nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_world_survives_a_restart_of_the_world_service() {
    let mut cluster = Cluster::start(&CAST, &rules()).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "durable").await;
    let before = advance(&mut world, &id, advance_request::Until::SceneEnd(true)).await;
    assert_eq!(before.last().map(|e| e.kind()), Some(EventKind::SceneEnd));
    drop(world);

    cluster.restart_world().await;
    let mut world = cluster.world().await;
    let info = world
        .get_world(GetWorldRequest {
            world_id: id.clone(),
        })
        .await
        .expect("the world came back")
        .into_inner();
    assert_eq!(info.next_seq, before.len() as u64 + 1);
    assert_eq!(info.current_scene, 2, "it resumes at the second scene");

    let (last_tx, last_rx) = tokio::sync::watch::channel(u64::MAX);
    let replay = tokio::spawn(collect(watch(&mut world, &id, 1).await, last_rx));
    let after = advance(&mut world, &id, advance_request::Until::ScriptEnd(true)).await;
    let last = after.last().map(|e| e.seq).expect("more happened");
    let _ = last_tx.send(last); // the replay may have ended with the finished world

    let (replayed, _) = replay.await.expect("replay");
    let all: Vec<Event> = before.iter().chain(after.iter()).cloned().collect();
    assert_eq!(
        replayed, all,
        "the log holds every event once, across the restart"
    );
    assert_eq!(
        after[0].seq,
        before.len() as u64 + 1,
        "numbering continues without a gap"
    );

    // Watson's agent was re-attached and caught up without duplicates.
    let watson = cluster.snapshot(&id, "watson").await;
    let seqs: Vec<u64> = watson
        .memory
        .iter()
        .filter(|m| m.seq > 0)
        .map(|m| m.seq)
        .collect();
    let mut unique = seqs.clone();
    unique.dedup();
    assert_eq!(seqs, unique, "no event stored twice");
    assert_eq!(
        watson.last_seq, last,
        "Watson perceived everything up to the final scene end"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worlds_in_one_service_run_at_once_and_stay_apart() {
    let cluster = Cluster::start(&CAST, &rules()).await;
    let world = cluster.world().await;
    let a = cluster.create("study-in-scarlet", "world-a").await;
    let b = cluster.create("study-in-scarlet", "world-b").await;
    let (mut wa, mut wb) = (world.clone(), world.clone());
    let (events_a, events_b) = tokio::join!(
        advance(&mut wa, &a, advance_request::Until::ScriptEnd(true)),
        advance(&mut wb, &b, advance_request::Until::ScriptEnd(true)),
    );
    assert_eq!(events_a.len(), events_b.len());
    assert!(events_a.iter().all(|e| e.world_id == a));
    assert!(events_b.iter().all(|e| e.world_id == b));
    assert_eq!(
        events_a.first().map(|e| e.seq),
        Some(1),
        "each world numbers its own events"
    );
    assert_eq!(events_b.first().map(|e| e.seq), Some(1));
    // The same agent hosts Watson in both worlds, with a shard per world.
    let in_a = cluster.snapshot(&a, "watson").await;
    let in_b = cluster.snapshot(&b, "watson").await;
    let perceived = |s: &dramatis_proto::v1::SnapshotResponse| {
        s.memory.iter().filter(|m| m.source == "perceived").count()
    };
    assert_eq!(perceived(&in_a), perceived(&in_b));
    let watson_lines_a = events_a
        .iter()
        .filter(|e| e.perceivers.contains(&"watson".to_owned()));
    assert_eq!(
        in_a.last_seq,
        watson_lines_a.map(|e| e.seq).max().unwrap_or(0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_point_of_view_watcher_sees_only_what_that_character_perceived() {
    let cluster = Cluster::start(&CAST, &rules()).await;
    let mut world = cluster.world().await;
    let id = cluster.create("study-in-scarlet", "pov").await;
    let (last_tx, last_rx) = tokio::sync::watch::channel(u64::MAX);
    let watch_as = |who: &str| WatchRequest {
        world_id: id.clone(),
        from_seq: 1,
        no_follow: false,
        pov: who.into(),
    };
    let live = world
        .watch(watch_as("the inspector"))
        .await
        .expect("watch")
        .into_inner();
    let watson_live = world
        .watch(watch_as("watson"))
        .await
        .expect("watch")
        .into_inner();
    let lestrade_task = tokio::spawn(collect(live, last_rx.clone()));
    let watson_task = tokio::spawn(collect(watson_live, last_rx.clone()));
    let all = advance(&mut world, &id, advance_request::Until::ScriptEnd(true)).await;
    // POV streams end at the last event each character perceived.
    let last_for = |who: &str| {
        all.iter()
            .filter(|e| e.perceivers.iter().any(|p| p == who))
            .map(|e| e.seq)
            .max()
            .unwrap_or(0)
    };
    let (lestrade_last, watson_last) = (last_for("lestrade"), last_for("watson"));
    let _ = last_tx.send(lestrade_last); // a finished world's Watch may have closed

    let (lestrade_events, lestrade_tokens) = lestrade_task.await.expect("lestrade watcher");
    let _ = last_tx.send(watson_last);
    let (watson_events, watson_tokens) = watson_task.await.expect("watson watcher");

    let seen_by = |who: &str| -> Vec<u64> {
        all.iter()
            .filter(|e| e.perceivers.iter().any(|p| p == who))
            .map(|e| e.seq)
            .collect()
    };
    let seqs = |events: &[Event]| events.iter().map(|e| e.seq).collect::<Vec<_>>();
    assert_eq!(seqs(&lestrade_events), seen_by("lestrade"));
    assert_eq!(seqs(&watson_events), seen_by("watson"));
    assert!(seqs(&lestrade_events).len() < all.len());
    for event in &lestrade_events {
        for canary in [LAB_CANARY, THOUGHT_CANARY, CRITERION_CANARY] {
            assert!(!event.text.contains(canary) && !event.thought.contains(canary));
        }
        assert!(event.thought.is_empty() || event.speaker == "lestrade");
    }
    assert!(
        lestrade_tokens
            .values()
            .all(|t| !t.contains(LAB_CANARY) && !t.contains(CRITERION_CANARY)),
        "no words of lines spoken elsewhere"
    );
    assert!(!lestrade_tokens.is_empty(), "his own scenes streamed");
    // Watson heard the lab line, word by word, but not Holmes's thought.
    assert!(watson_events.iter().any(|e| e.text.contains(LAB_CANARY)));
    assert!(
        watson_events
            .iter()
            .all(|e| !e.thought.contains(THOUGHT_CANARY))
    );
    assert!(watson_tokens.values().any(|t| t.contains(LAB_CANARY)));

    let unknown = world
        .watch(watch_as("moriarty"))
        .await
        .expect_err("unknown character");
    assert_eq!(unknown.code(), tonic::Code::NotFound);
}
