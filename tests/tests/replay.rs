//! A world replaying a logged run (`CreateWorldRequest.replay`), as `eval kbf
//! --from-log` walks a story a model played: over loopback, the shipped scenario played
//! by one scripted model is replayed in a service whose model would say other lines.
//! The replay logs the run's events, and the KBF gold made from it is the gold a
//! scripted replay of the same run gives. What it cannot play is refused.

use dramatis_eval::probes::{At, generate};
use dramatis_eval::walk::{Logged, Run, Walk};
use dramatis_llm::ScriptRule;
use dramatis_proto::v1::{CreateWorldRequest, Event, advance_request, create_world_request};
use dramatis_runtime::client::{ClientOptions, WorldRpc, world_client};
use dramatis_scenario::Scenario;
use dramatis_tests::{Cluster, advance, assert_refused, holmes_in_the_lab_says, scenarios_dir};

const CAST: [&str; 4] = ["holmes", "lestrade", "stamford", "watson"];
/// Holmes says it in the second scene in the run that is logged.
const CANARY: &str = "REPLAY-CANARY-2231";

fn rules() -> Vec<ScriptRule> {
    vec![holmes_in_the_lab_says(&format!(
        "I have found a reagent. {CANARY}"
    ))]
}

fn scenario_path() -> std::path::PathBuf {
    scenarios_dir()
        .join("study-in-scarlet")
        .join("scenario.toml")
}

async fn client(cluster: &Cluster) -> WorldRpc {
    world_client(&ClientOptions::local(&cluster.world_endpoint))
        .await
        .expect("client")
}

/// What the gold rests on, of each event of a walked run: its position, number, kind,
/// actor, words, target, place and (sorted) perceivers.
fn logged_as(run: &Run) -> Vec<(u32, Event)> {
    run.log
        .iter()
        .map(|(at, e)| {
            let mut perceivers = e.perceivers.clone();
            perceivers.sort();
            let kept = Event {
                seq: e.seq,
                kind: e.kind,
                speaker: e.speaker.clone(),
                text: e.text.clone(),
                target: e.target.clone(),
                location: e.location.clone(),
                perceivers,
                ..Event::default()
            };
            (*at, kept)
        })
        .collect()
}

/// Each generated item's id, character, position and gold.
fn gold(scenario: &Scenario, run: &Run) -> Vec<(String, String, Option<u32>, char)> {
    generate(scenario, run, At::Line, "test")
        .into_iter()
        .map(|p| (p.id, p.character, p.at, p.gold))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_logs_the_run_and_gives_the_gold_a_scripted_replay_gives() {
    let played = Cluster::start(&CAST, &rules()).await;
    // Its model has no rule: left to itself it says other lines.
    let other = Cluster::start(&CAST, &[]).await;
    let path = scenario_path();
    let scenario = Scenario::load(&path).expect("scenario");

    // The run: the scripted replay walks it one turn at a time.
    let mut scripted = Walk::start(client(&played).await, &path)
        .await
        .expect("world");
    scripted.play_to_end().await.expect("played");
    let logged = Logged::read(&mut client(&played).await, &scripted.world)
        .await
        .expect("log");
    assert!(logged.finished);
    assert!(
        logged.events.iter().any(|e| e.text.contains(CANARY)),
        "the logged run holds the line only its model says"
    );

    let mut replay = Walk::replay(client(&other).await, &path, logged.clone())
        .await
        .expect("replay world");
    replay.play_to_end().await.expect("replayed");
    assert!(replay.run.finished);
    assert_eq!(logged_as(&replay.run), logged_as(&scripted.run));
    assert_eq!(replay.run.scene_ends, scripted.run.scene_ends);
    assert_eq!(logged_as(&logged.run()), logged_as(&scripted.run));

    let expected = gold(&scenario, &scripted.run);
    assert!(expected.len() > 20, "{} items", expected.len());
    assert_eq!(gold(&scenario, &replay.run), expected);
    assert_eq!(gold(&scenario, &logged.run()), expected);

    // The replayed world's characters remember the lines as any world's do: Holmes
    // said the canary there, though its model never did.
    assert!(
        other
            .shard_text(&replay.world, "holmes")
            .await
            .contains(CANARY)
    );
    assert!(
        !other
            .agent("holmes")
            .model
            .prompts()
            .iter()
            .any(|p| p.text().contains("perfected your test")),
        "no turn of the replay was asked of a model"
    );

    // Without the replay, the other service's story is not the logged one.
    let mut own = Walk::start(client(&other).await, &path)
        .await
        .expect("world");
    own.play_to_end().await.expect("played");
    assert!(!own.run.log.iter().any(|(_, e)| e.text.contains(CANARY)));
}

fn create(scenario: &str, id: &str, replay: Vec<Event>) -> CreateWorldRequest {
    CreateWorldRequest {
        source: Some(create_world_request::Source::ScenarioName(scenario.into())),
        world_id: id.into(),
        replay,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_refuses_a_log_it_cannot_play_and_a_story_that_leaves_it() {
    let cluster = Cluster::start(&CAST, &rules()).await;
    let mut world = cluster.world().await;
    let source = cluster.create("study-in-scarlet", "source").await;
    advance(&mut world, &source, advance_request::Until::Turns(4)).await;
    let log = dramatis_tests::replay_as(&mut world, &source, "").await;
    let lines: Vec<usize> = (0..log.len()).filter(|i| log[*i].turn > 0).collect();
    assert_eq!(lines.len(), 4);

    // A log it cannot play is refused at creation, and no world is made.
    let mut directed = log.clone();
    directed[0].director = true;
    let mut stranger = log.clone();
    stranger[lines[1]].speaker = "moriarty".into();
    let mut shuffled = log.clone();
    shuffled.swap(0, 1);
    for (replay, why) in [
        (directed, "director"),
        (stranger, "not in the cast"),
        (shuffled, "in order"),
    ] {
        assert_refused(
            world
                .create_world(create("study-in-scarlet", "bad", replay))
                .await,
            tonic::Code::InvalidArgument,
            why,
        );
    }
    assert_refused(
        world
            .create_world(create("lamplighters-ledger", "open", log.clone()))
            .await,
        tonic::Code::InvalidArgument,
        "open story",
    );

    // The log played out: the story goes no further.
    world
        .create_world(create("study-in-scarlet", "short", log.clone()))
        .await
        .expect("replay world");
    let played = advance(&mut world, "short", advance_request::Until::Turns(4)).await;
    let texts = |events: &[Event]| {
        events
            .iter()
            .filter(|e| e.turn > 0)
            .map(|e| e.text.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(texts(&played), texts(&log));
    let past = world
        .advance(dramatis_proto::v1::AdvanceRequest {
            world_id: "short".into(),
            until: Some(advance_request::Until::Turns(1)),
        })
        .await;
    assert_refused(past, tonic::Code::FailedPrecondition, "4 lines are played");

    // A log whose line is someone else's than the story's turn: the replay stops there.
    let mut swapped = log.clone();
    let second = &mut swapped[lines[1]];
    second.speaker = if second.speaker == "watson" {
        "stamford".into()
    } else {
        "watson".into()
    };
    world
        .create_world(create("study-in-scarlet", "astray", swapped))
        .await
        .expect("replay world");
    advance(&mut world, "astray", advance_request::Until::Turns(1)).await;
    let astray = world
        .advance(dramatis_proto::v1::AdvanceRequest {
            world_id: "astray".into(),
            until: Some(advance_request::Until::Turns(1)),
        })
        .await;
    assert_refused(astray, tonic::Code::FailedPrecondition, "left the log");
}
