//! Malformed and impossible requests get precise gRPC statuses and change nothing;
//! both services carry health and reflection.
#![allow(
    clippy::too_many_lines,
    reason = "an end-to-end test tells one story from start to end; cut up, it would hide its order"
)]

use dramatis_proto::v1::agent_client::AgentClient;
use dramatis_proto::v1::{
    ActRequest, AdvanceRequest, AsOf, AskRequest, AttachRequest, CharacterProfile, CharacterRef,
    CreateWorldRequest, DeleteWorldRequest, Event, GetWorldRequest, ListScenariosRequest,
    ListScenariosResponse, ListWorldsRequest, PerceiveRequest, SceneFrame, WatchRequest,
    advance_request, as_of, create_world_request,
};
use dramatis_tests::{Cluster, assert_refused};
use tonic::Code;
use tonic::transport::Channel;

const CAST: [&str; 4] = ["holmes", "lestrade", "stamford", "watson"];

fn by_name(name: &str) -> Option<create_world_request::Source> {
    Some(create_world_request::Source::ScenarioName(name.into()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn world_requests_are_validated_precisely() {
    let cluster = Cluster::start(&CAST, &[]).await;
    let mut world = cluster.world().await;

    let listed = world
        .list_scenarios(ListScenariosRequest {})
        .await
        .expect("list")
        .into_inner();
    let names: Vec<&str> = listed.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["lamplighters-ledger", "study-in-scarlet"]);
    assert_eq!(
        listed.scenarios[1].characters,
        ["watson", "stamford", "holmes", "lestrade"]
    );
    assert_eq!(
        listed.scenarios[0].characters,
        ["ada", "coyle", "tom", "varga"]
    );

    assert_refused(
        world
            .create_world(CreateWorldRequest {
                source: None,
                world_id: String::new(),
                ..Default::default()
            })
            .await,
        Code::InvalidArgument,
        "source is required",
    );
    assert_refused(
        world
            .create_world(CreateWorldRequest {
                source: by_name("hamlet"),
                world_id: String::new(),
                ..Default::default()
            })
            .await,
        Code::NotFound,
        "no shipped scenario named \"hamlet\"",
    );
    let broken = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../crates/scenario/tests/broken/unknown-cast.toml");
    assert_refused(
        world
            .create_world(CreateWorldRequest {
                source: Some(create_world_request::Source::ScenarioPath(
                    broken.to_string_lossy().into(),
                )),
                world_id: String::new(),
                ..Default::default()
            })
            .await,
        Code::InvalidArgument,
        "unknown-cast.toml:19: scenes[0].cast[1]: unknown character \"lestrade\"",
    );
    assert_refused(
        world
            .create_world(CreateWorldRequest {
                source: by_name("study-in-scarlet"),
                world_id: "no spaces".into(),
                ..Default::default()
            })
            .await,
        Code::InvalidArgument,
        "world_id",
    );
    let created = world
        .create_world(CreateWorldRequest {
            source: by_name("study-in-scarlet"),
            world_id: "w1".into(),
            ..Default::default()
        })
        .await
        .expect("create")
        .into_inner();
    assert_eq!(created.world_id, "w1");
    assert_eq!(created.next_seq, 1);
    assert_refused(
        world
            .create_world(CreateWorldRequest {
                source: by_name("study-in-scarlet"),
                world_id: "w1".into(),
                ..Default::default()
            })
            .await,
        Code::AlreadyExists,
        "\"w1\"",
    );
    let worlds = world
        .list_worlds(ListWorldsRequest {})
        .await
        .expect("list")
        .into_inner()
        .worlds;
    assert_eq!(worlds.len(), 1, "failed creations left nothing behind");

    assert_refused(
        world
            .get_world(GetWorldRequest {
                world_id: String::new(),
            })
            .await,
        Code::InvalidArgument,
        "world_id is required",
    );
    assert_refused(
        world
            .get_world(GetWorldRequest {
                world_id: "w2".into(),
            })
            .await,
        Code::NotFound,
        "world \"w2\" not found",
    );
    assert_refused(
        world
            .advance(AdvanceRequest {
                world_id: "w1".into(),
                until: None,
            })
            .await,
        Code::InvalidArgument,
        "until is required",
    );
    assert_refused(
        world
            .advance(AdvanceRequest {
                world_id: "w1".into(),
                until: Some(advance_request::Until::Turns(0)),
            })
            .await,
        Code::InvalidArgument,
        "turns must be at least 1",
    );
    assert_refused(
        world
            .ask(AskRequest {
                world_id: "w1".into(),
                character: "moriarty".into(),
                question: "Who?".into(),
                ..AskRequest::default()
            })
            .await,
        Code::NotFound,
        "no character \"moriarty\"",
    );
    assert_refused(
        world
            .ask(AskRequest {
                world_id: "w1".into(),
                character: "holmes".into(),
                question: " ".into(),
                ..AskRequest::default()
            })
            .await,
        Code::InvalidArgument,
        "question is required",
    );
    let ask_with = |options: Vec<String>| AskRequest {
        world_id: "w1".into(),
        character: "holmes".into(),
        question: "Who?".into(),
        options,
        ..AskRequest::default()
    };
    assert_refused(
        world
            .ask(ask_with((0..9).map(|i| format!("option {i}")).collect()))
            .await,
        Code::InvalidArgument,
        "9 options; a question takes at most 8",
    );
    assert_refused(
        world
            .ask(ask_with(vec!["Watson".into(), "  ".into()]))
            .await,
        Code::InvalidArgument,
        "an option must not be empty",
    );
    let ask_as_of = |point: Option<as_of::Point>| AskRequest {
        world_id: "w1".into(),
        character: "holmes".into(),
        question: "Who?".into(),
        as_of: Some(AsOf { point }),
        ..AskRequest::default()
    };
    assert_refused(
        world.ask(ask_as_of(Some(as_of::Point::Seq(1)))).await,
        Code::OutOfRange,
        "the story has logged 0 events",
    );
    assert_refused(
        world.ask(ask_as_of(Some(as_of::Point::Seq(0)))).await,
        Code::OutOfRange,
        "events are numbered from 1",
    );
    assert_refused(
        world
            .ask(ask_as_of(Some(as_of::Point::Scene("1".into()))))
            .await,
        Code::OutOfRange,
        "no such scene has begun",
    );
    assert_refused(
        world.ask(ask_as_of(None)).await,
        Code::InvalidArgument,
        "as_of names no moment",
    );
    let unchanged = world
        .get_world(GetWorldRequest {
            world_id: "w1".into(),
        })
        .await
        .expect("get")
        .into_inner();
    assert_eq!(unchanged.next_seq, 1, "rejected requests changed nothing");

    // Deleting a world ends its watchers and forgets it.
    let mut stream = world
        .watch(WatchRequest {
            world_id: "w1".into(),
            from_seq: 1,
            no_follow: false,
            pov: String::new(),
        })
        .await
        .expect("watch")
        .into_inner();
    world
        .delete_world(DeleteWorldRequest {
            world_id: "w1".into(),
        })
        .await
        .expect("delete");
    assert!(
        stream.message().await.expect("clean end").is_none(),
        "the watch stream ends"
    );
    assert_refused(
        world
            .get_world(GetWorldRequest {
                world_id: "w1".into(),
            })
            .await,
        Code::NotFound,
        "w1",
    );
    assert_refused(
        world
            .delete_world(DeleteWorldRequest {
                world_id: "w1".into(),
            })
            .await,
        Code::NotFound,
        "w1",
    );
}

fn character(world: &str, id: &str) -> Option<CharacterRef> {
    Some(CharacterRef {
        world_id: world.into(),
        character_id: id.into(),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_requests_are_validated_and_foreign_events_refused() {
    let cluster = Cluster::start(&["holmes"], &[]).await;
    let mut agent: AgentClient<Channel> = cluster.agent("holmes").client().await;
    assert_refused(
        agent
            .act(ActRequest {
                character: character("w", "holmes"),
                frame: Some(SceneFrame::default()),
            })
            .await,
        Code::NotFound,
        "not attached",
    );
    assert_refused(
        agent
            .attach(AttachRequest {
                character: character("w", "holmes"),
                profile: None,
            })
            .await,
        Code::InvalidArgument,
        "profile is required",
    );
    assert_refused(
        agent
            .attach(AttachRequest {
                character: None,
                profile: None,
            })
            .await,
        Code::InvalidArgument,
        "character is required",
    );
    let profile = CharacterProfile {
        id: "holmes".into(),
        name: "Sherlock Holmes".into(),
        ..CharacterProfile::default()
    };
    assert_refused(
        agent
            .attach(AttachRequest {
                character: character("w", "watson"),
                profile: Some(profile.clone()),
            })
            .await,
        Code::InvalidArgument,
        "does not match",
    );
    agent
        .attach(AttachRequest {
            character: character("w", "holmes"),
            profile: Some(profile),
        })
        .await
        .expect("attach");
    let overheard = Event {
        world_id: "w".into(),
        seq: 1,
        speaker: "watson".into(),
        perceivers: vec!["watson".into()],
        ..Event::default()
    };
    assert_refused(
        agent
            .perceive(PerceiveRequest {
                character: character("w", "holmes"),
                events: vec![overheard],
            })
            .await,
        Code::InvalidArgument,
        "was not perceived by \"holmes\"",
    );
    let other_world = Event {
        world_id: "x".into(),
        seq: 1,
        perceivers: vec!["holmes".into()],
        ..Event::default()
    };
    assert_refused(
        agent
            .perceive(PerceiveRequest {
                character: character("w", "holmes"),
                events: vec![other_world],
            })
            .await,
        Code::InvalidArgument,
        "belongs to world \"x\"",
    );
    let snapshot = agent
        .snapshot(dramatis_proto::v1::SnapshotRequest {
            character: character("w", "holmes"),
            ..Default::default()
        })
        .await
        .expect("snapshot")
        .into_inner();
    assert!(snapshot.memory.is_empty(), "refused events stored nothing");
    assert_eq!(snapshot.last_seq, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_services_answer_health_checks_and_reflection() {
    use tonic_health::pb::health_client::HealthClient;
    use tonic_health::pb::{HealthCheckRequest, health_check_response::ServingStatus};
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

    let cluster = Cluster::start(&["holmes"], &[]).await;
    for (endpoint, service) in [
        (cluster.world_endpoint.clone(), "dramatis.v1.World"),
        (
            cluster.agent("holmes").endpoint.clone(),
            "dramatis.v1.Agent",
        ),
    ] {
        let channel = Channel::from_shared(endpoint)
            .expect("uri")
            .connect()
            .await
            .expect("connect");
        let health = HealthClient::new(channel.clone())
            .check(HealthCheckRequest {
                service: service.into(),
            })
            .await
            .expect("health")
            .into_inner();
        assert_eq!(health.status, ServingStatus::Serving as i32);
        let request = ServerReflectionRequest {
            host: String::new(),
            message_request: Some(MessageRequest::ListServices(String::new())),
        };
        let mut responses = ServerReflectionClient::new(channel.clone())
            .server_reflection_info(tokio_stream::iter([request]))
            .await
            .expect("reflection")
            .into_inner();
        let response = responses
            .message()
            .await
            .expect("reply")
            .expect("one reply");
        let Some(MessageResponse::ListServicesResponse(list)) = response.message_response else {
            panic!("unexpected reflection reply");
        };
        let mut names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        names.sort();
        // Every listed service can be described, as `grpcurl describe` does: the file
        // that defines it is found (before, the reflection services were NOT_FOUND).
        for name in &names {
            let ask = ServerReflectionRequest {
                host: String::new(),
                message_request: Some(MessageRequest::FileContainingSymbol(name.clone())),
            };
            let mut answers = ServerReflectionClient::new(channel.clone())
                .server_reflection_info(tokio_stream::iter([ask]))
                .await
                .expect("reflection")
                .into_inner();
            let answer = answers.message().await.expect("reply").expect("one reply");
            match answer.message_response {
                Some(MessageResponse::FileDescriptorResponse(files)) => {
                    assert!(!files.file_descriptor_proto.is_empty(), "{name}");
                }
                other => panic!("{service}: describing {name} failed: {other:?}"),
            }
        }
        // Exactly what this port serves: not the other service of dramatis.v1.
        assert_eq!(
            names,
            [
                service,
                "grpc.health.v1.Health",
                "grpc.reflection.v1.ServerReflection",
                "grpc.reflection.v1alpha.ServerReflection",
            ],
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_reach_the_world_service_over_grpc_web() {
    use prost::Message as _;
    let cluster = Cluster::start(&CAST, &[]).await;
    // A gRPC-Web call as a browser makes it: HTTP/1.1 POST, one length-prefixed frame.
    let body = [0u8, 0, 0, 0, 0]; // data frame, empty ListScenariosRequest
    let _ = rustls::crypto::ring::default_provider().install_default();
    let response = reqwest::Client::new()
        .post(format!(
            "{}/dramatis.v1.World/ListScenarios",
            cluster.world_endpoint
        ))
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(body.to_vec())
        .send()
        .await
        .expect("http/1.1 request");
    assert_eq!(response.status(), 200);
    assert_eq!(response.version(), reqwest::Version::HTTP_11);
    let bytes = response.bytes().await.expect("body");
    assert_eq!(bytes[0], 0, "a data frame first");
    let length = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize;
    let listed = ListScenariosResponse::decode(&bytes[5..5 + length]).expect("protobuf");
    let names: Vec<&str> = listed.scenarios.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["lamplighters-ledger", "study-in-scarlet"]);
    let trailers = String::from_utf8_lossy(&bytes[5 + length + 5..]);
    assert_eq!(bytes[5 + length], 0x80, "then the trailer frame");
    assert!(trailers.contains("grpc-status:0"), "{trailers}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_world_port_serves_the_viewer_files_and_nothing_else() {
    let cluster = Cluster::start(&CAST, &[]).await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let get = |path: &str| {
        let request = http.get(format!("{}{path}", cluster.world_endpoint));
        async move {
            let response = request.send().await.expect("http/1.1 get");
            let status = response.status().as_u16();
            let kind = response
                .headers()
                .get("content-type")
                .map(|v| v.to_str().unwrap_or_default().to_owned())
                .unwrap_or_default();
            (status, kind, response.text().await.unwrap_or_default())
        }
    };
    let (status, kind, page) = get("/viewer/").await;
    assert_eq!((status, kind.as_str()), (200, "text/html; charset=utf-8"));
    assert!(page.contains("<title>Dramatis viewer</title>"), "{page}");
    let (status, kind, script) = get("/viewer/grpcweb.js").await;
    assert_eq!(
        (status, kind.as_str()),
        (200, "text/javascript; charset=utf-8")
    );
    assert!(script.contains("application/grpc-web+proto"));
    // The .proto sources the page parses are the ones this binary was built from.
    let (status, _, proto) = get("/viewer/proto/dramatis/v1/world.proto").await;
    assert_eq!(status, 200);
    assert_eq!(proto, include_str!("../../proto/dramatis/v1/world.proto"));
    // Only the listed files: no other name, no way out of the directory.
    for path in [
        "/viewer/Cargo.toml",
        "/viewer/..%2F..%2FCargo.toml",
        "/viewer/proto/dramatis/v1/nope.proto",
        "/viewer/tests/viewer.test.mjs",
    ] {
        let (status, _, body) = get(path).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
    // A page whose name was re-pointed at this machine (DNS rebinding) is refused,
    // for files and for gRPC-Web calls alike.
    let rebound = http
        .get(format!("{}/viewer/", cluster.world_endpoint))
        .header("host", "evil.example:7070")
        .send()
        .await
        .expect("get");
    assert_eq!(rebound.status(), 403);
    let rebound_call = http
        .post(format!(
            "{}/dramatis.v1.World/ListWorlds",
            cluster.world_endpoint
        ))
        .header("host", "evil.example")
        .header("content-type", "application/grpc-web+proto")
        .header("x-grpc-web", "1")
        .body(vec![0u8, 0, 0, 0, 0])
        .send()
        .await
        .expect("post");
    assert_eq!(rebound_call.status(), 403);
    let by_name = http
        .get(format!("{}/viewer/", cluster.world_endpoint))
        .header("host", "localhost")
        .send()
        .await
        .expect("get");
    assert_eq!(by_name.status(), 200);
    // The root leads to the page.
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client")
        .get(format!("{}/", cluster.world_endpoint))
        .send()
        .await
        .expect("get /");
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"], "/viewer/");
}
