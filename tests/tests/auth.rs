//! A deployment secured for exposure: the world service takes bearer tokens by role
//! over TLS, and agents answer only the world service (mutual TLS with the
//! deployment's CA). Every World RPC is tried with no token, an unknown token and each
//! role; every Agent RPC without the world's certificate.

use dramatis_proto::v1::agent_client::AgentClient;
use dramatis_proto::v1::world_client::WorldClient;
use dramatis_proto::v1::{
    ActRequest, AdvanceRequest, AnswerRequest, AskRequest, AttachRequest, CharacterRef,
    CreateWorldRequest, DeleteWorldRequest, DetachRequest, GetAuditRequest, GetWorldRequest,
    ListScenariosRequest, ListWorldsRequest, PerceiveRequest, PlayActRequest, PlayClaim,
    PlayRequest, SnapshotRequest, WatchRequest, advance_request, create_world_request,
};
use dramatis_runtime::auth::Role;
use dramatis_runtime::pki::DeploymentPki;
use dramatis_tests::{Cluster, channel};
use tonic::transport::{Channel, ClientTlsConfig};
use tonic::{Code, Request, Status};

const CAST: [&str; 4] = ["holmes", "lestrade", "stamford", "watson"];
const VIEWER: &str = "viewer-token-0123456789";
const PLAYER: &str = "player-token-0123456789";
const OPERATOR: &str = "operator-token-0123456789";
const TOKENS: &str = "viewer viewer-token-0123456789 vera\n\
                      player player-token-0123456789 pat\n\
                      operator operator-token-0123456789 olga\n";

/// Every World method and the least role the issue gives it.
const METHODS: [(&str, Role); 12] = [
    ("ListScenarios", Role::Viewer),
    ("ListWorlds", Role::Viewer),
    ("GetWorld", Role::Viewer),
    ("Watch", Role::Viewer),
    ("ClaimSeat", Role::Player),
    ("Play", Role::Player),
    ("PlayAct", Role::Player),
    ("Ask", Role::Player),
    ("CreateWorld", Role::Operator),
    ("Advance", Role::Operator),
    ("DeleteWorld", Role::Operator),
    ("GetAudit", Role::Operator),
];

fn signed<T>(message: T, token: Option<&str>) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(token) = token {
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {token}").parse().expect("header value"),
        );
    }
    request
}

/// Calls `method` with an empty request; the status (or OK).
async fn call(
    world: &mut WorldClient<Channel>,
    method: &str,
    token: Option<&str>,
) -> Result<(), Status> {
    match method {
        "ListScenarios" => world
            .list_scenarios(signed(ListScenariosRequest {}, token))
            .await
            .map(drop),
        "ListWorlds" => world
            .list_worlds(signed(ListWorldsRequest {}, token))
            .await
            .map(drop),
        "GetWorld" => world
            .get_world(signed(GetWorldRequest::default(), token))
            .await
            .map(drop),
        "Watch" => world
            .watch(signed(
                WatchRequest {
                    no_follow: true,
                    ..WatchRequest::default()
                },
                token,
            ))
            .await
            .map(drop),
        "ClaimSeat" => world
            .claim_seat(signed(PlayClaim::default(), token))
            .await
            .map(drop),
        "Play" => world
            .play(signed(
                tokio_stream::iter(vec![PlayRequest::default()]),
                token,
            ))
            .await
            .map(drop),
        "PlayAct" => world
            .play_act(signed(PlayActRequest::default(), token))
            .await
            .map(drop),
        "Ask" => world
            .ask(signed(AskRequest::default(), token))
            .await
            .map(drop),
        "CreateWorld" => world
            .create_world(signed(CreateWorldRequest::default(), token))
            .await
            .map(drop),
        "Advance" => world
            .advance(signed(AdvanceRequest::default(), token))
            .await
            .map(drop),
        "DeleteWorld" => world
            .delete_world(signed(DeleteWorldRequest::default(), token))
            .await
            .map(drop),
        "GetAudit" => world
            .get_audit(signed(GetAuditRequest::default(), token))
            .await
            .map(drop),
        other => panic!("no method {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_world_rpc_needs_a_known_token_whose_role_covers_it() {
    let cluster = Cluster::start_secured(&CAST, &[], TOKENS).await;
    assert!(cluster.world_endpoint.starts_with("https://"));
    let mut world = cluster.world().await;
    let mut refused = 0;
    for (method, needed) in METHODS {
        for token in [None, Some("unknown-token-0123456789")] {
            let status = call(&mut world, method, token).await.expect_err(method);
            assert_eq!(
                status.code(),
                Code::Unauthenticated,
                "{method} {token:?}: {status:?}"
            );
            refused += 1;
        }
        for (token, role) in [
            (VIEWER, Role::Viewer),
            (PLAYER, Role::Player),
            (OPERATOR, Role::Operator),
        ] {
            let outcome = call(&mut world, method, Some(token)).await;
            if role < needed {
                let status = outcome.expect_err(method);
                assert_eq!(
                    status.code(),
                    Code::PermissionDenied,
                    "{method} as {role}: {status:?}"
                );
                assert!(
                    status
                        .message()
                        .contains(&format!("{method} needs the {needed} role")),
                    "{status:?}"
                );
                refused += 1;
            } else if let Err(status) = outcome {
                // Let through: whatever it says is about the empty request, not the caller.
                assert!(
                    !matches!(
                        status.code(),
                        Code::Unauthenticated | Code::PermissionDenied
                    ),
                    "{method} as {role}: {status:?}"
                );
            }
        }
    }
    // 12 methods × 2 bad tokens, plus 4 player methods and 4 operator methods refused
    // to the viewer, and 4 operator methods refused to the player.
    assert_eq!(refused, 24 + 4 + 4 + 4);

    // Health answers probes without a token; reflection needs one.
    let mut health = tonic_health::pb::health_client::HealthClient::new(
        channel(
            &cluster.world_endpoint,
            cluster.secured.as_ref().map(|s| s.client_tls()),
        )
        .await,
    );
    let serving = health
        .check(tonic_health::pb::HealthCheckRequest {
            service: "dramatis.v1.World".into(),
        })
        .await
        .expect("health without a token")
        .into_inner();
    assert_eq!(serving.status, 1, "SERVING");
    let mut reflection =
        tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient::new(
            channel(
                &cluster.world_endpoint,
                cluster.secured.as_ref().map(|s| s.client_tls()),
            )
            .await,
        );
    let ask = || {
        tokio_stream::iter(vec![tonic_reflection::pb::v1::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(
                tonic_reflection::pb::v1::server_reflection_request::MessageRequest::ListServices(
                    String::new(),
                ),
            ),
        }])
    };
    let status = reflection
        .server_reflection_info(ask())
        .await
        .expect_err("reflection without a token");
    assert_eq!(status.code(), Code::Unauthenticated);
    assert!(
        reflection
            .server_reflection_info(signed(ask(), Some(VIEWER)))
            .await
            .is_ok()
    );
}

/// The whole story through the secured deployment: the operator creates and runs it
/// (the world reaching its agents over mutual TLS), a viewer watches it, a player
/// interviews a character; the prompt audit stays the operator's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secured_deployment_plays_a_story_for_each_role() {
    let cluster = Cluster::start_secured(&CAST, &[], TOKENS).await;
    let mut world = create_as_operator(&cluster).await;
    let advanced = world
        .advance(signed(
            AdvanceRequest {
                world_id: "secured".into(),
                until: Some(advance_request::Until::ScriptEnd(true)),
            },
            Some(OPERATOR),
        ))
        .await
        .expect("the operator runs it")
        .into_inner();
    assert!(
        advanced.events.len() > 10,
        "{} events",
        advanced.events.len()
    );

    let mut watched = world
        .watch(signed(
            WatchRequest {
                world_id: "secured".into(),
                no_follow: true,
                ..WatchRequest::default()
            },
            Some(VIEWER),
        ))
        .await
        .expect("a viewer watches")
        .into_inner();
    let mut seqs = Vec::new();
    while let Some(item) = tokio_stream::StreamExt::next(&mut watched).await {
        if let Some(dramatis_proto::v1::watch_response::Item::Event(event)) =
            item.expect("item").item
        {
            seqs.push(event.seq);
        }
    }
    let logged: Vec<u64> = advanced.events.iter().map(|e| e.seq).collect();
    assert_eq!(
        seqs[seqs.len() - logged.len()..],
        logged[..],
        "the viewer saw every event"
    );

    let answer = world
        .ask(signed(
            AskRequest {
                world_id: "secured".into(),
                character: "watson".into(),
                question: "Who is Holmes?".into(),
                recall_only: true,
                options: Vec::new(),
                as_of: None,
            },
            Some(PLAYER),
        ))
        .await
        .expect("a player interviews Watson")
        .into_inner();
    assert!(!answer.recalled.is_empty(), "Watson recalls something");

    let audit = |token| {
        signed(
            GetAuditRequest {
                world_id: "secured".into(),
                character: "watson".into(),
                ..GetAuditRequest::default()
            },
            Some(token),
        )
    };
    let refused = world
        .get_audit(audit(PLAYER))
        .await
        .expect_err("the player");
    assert_eq!(refused.code(), Code::PermissionDenied);
    let audits = world
        .get_audit(audit(OPERATOR))
        .await
        .expect("the operator")
        .into_inner();
    assert!(!audits.audits[0].prompts.is_empty());
}

/// One token plays one character of a world: before, a single player token could
/// claim every seat and hold every turn for the seat wait. Another person (another
/// token) still takes another seat.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_token_plays_one_character_per_world() {
    let cluster = Cluster::start_secured(&CAST, &[], TOKENS).await;
    let mut world = create_as_operator(&cluster).await;
    let claim = |character: &str, token| {
        signed(
            PlayClaim {
                world_id: "secured".into(),
                character: character.into(),
                timeout_ms: 5_000,
                from_seq: 1,
            },
            Some(token),
        )
    };
    let mut first = world
        .claim_seat(claim("watson", PLAYER))
        .await
        .expect("the player's first seat")
        .into_inner();
    tokio_stream::StreamExt::next(&mut first)
        .await
        .expect("claimed")
        .expect("ok");
    let refused = world
        .claim_seat(claim("holmes", PLAYER))
        .await
        .expect_err("a second seat for the same token");
    assert_eq!(refused.code(), Code::ResourceExhausted, "{refused}");
    assert!(
        refused
            .message()
            .contains("\"pat\" plays watson in this world already"),
        "{refused}"
    );
    let mut other = world
        .claim_seat(claim("holmes", OPERATOR))
        .await
        .expect("another person's seat")
        .into_inner();
    tokio_stream::StreamExt::next(&mut other)
        .await
        .expect("claimed")
        .expect("ok");
    drop(first);
}

/// Creates world "secured" of the Study in Scarlet with the operator's token; returns
/// the client.
async fn create_as_operator(cluster: &Cluster) -> WorldClient<Channel> {
    let mut world = cluster.world().await;
    world
        .create_world(signed(
            CreateWorldRequest {
                source: Some(create_world_request::Source::ScenarioName(
                    "study-in-scarlet".into(),
                )),
                world_id: "secured".into(),
                ..Default::default()
            },
            Some(OPERATOR),
        ))
        .await
        .expect("the operator creates a world");
    world
}

fn watson() -> Option<CharacterRef> {
    Some(CharacterRef {
        world_id: "secured".into(),
        character_id: "watson".into(),
    })
}

/// Every Agent RPC, with empty requests; the status (or OK).
async fn agent_calls(agent: &mut AgentClient<Channel>) -> Vec<(&'static str, Result<(), Status>)> {
    vec![
        (
            "Attach",
            agent.attach(AttachRequest::default()).await.map(drop),
        ),
        (
            "Perceive",
            agent.perceive(PerceiveRequest::default()).await.map(drop),
        ),
        ("Act", agent.act(ActRequest::default()).await.map(drop)),
        (
            "Answer",
            agent
                .answer(AnswerRequest {
                    character: watson(),
                    question: "Who is Holmes?".into(),
                    recall_only: true,
                    options: Vec::new(),
                    as_of: None,
                })
                .await
                .map(drop),
        ),
        (
            "Snapshot",
            agent
                .snapshot(SnapshotRequest {
                    character: watson(),
                    ..Default::default()
                })
                .await
                .map(drop),
        ),
        (
            "Detach",
            agent
                .detach(DetachRequest {
                    character: watson(),
                    keep_shard: false,
                })
                .await
                .map(drop),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_answers_only_the_world_service() {
    let cluster = Cluster::start_secured(&CAST, &[], TOKENS).await;
    create_as_operator(&cluster).await;
    let secured = cluster.secured.clone().expect("secured");
    let endpoint = cluster.agent("watson").endpoint.clone();
    assert!(endpoint.starts_with("https://"), "{endpoint}");

    // TLS that trusts the agent, but no certificate of its own: a gRPC refusal.
    let mut anonymous = AgentClient::new(channel(&endpoint, Some(secured.client_tls())).await);
    let calls = agent_calls(&mut anonymous).await;
    assert_eq!(calls.len(), 6);
    for (method, outcome) in calls {
        let status = outcome.expect_err(method);
        assert_eq!(status.code(), Code::Unauthenticated, "{method}: {status:?}");
        assert!(
            status.message().contains("answers only its world service"),
            "{status:?}"
        );
    }
    // Probes need no certificate.
    let mut health = tonic_health::pb::health_client::HealthClient::new(
        channel(&endpoint, Some(secured.client_tls())).await,
    );
    assert!(
        health
            .check(tonic_health::pb::HealthCheckRequest::default())
            .await
            .is_ok()
    );

    // A certificate from another deployment's CA: the handshake itself fails.
    let other =
        DeploymentPki::generate(&[], &[], std::time::Duration::from_secs(3600)).expect("other CA");
    let forged = ClientTlsConfig::new()
        .ca_certificate(tonic::transport::Certificate::from_pem(&secured.pki.ca))
        .identity(tonic::transport::Identity::from_pem(
            &other.world.cert,
            &other.world.key,
        ));
    let attempt = Channel::from_shared(endpoint.clone())
        .expect("endpoint")
        .tls_config(forged)
        .expect("tls")
        .connect()
        .await;
    if let Ok(forged) = attempt {
        let status = AgentClient::new(forged)
            .snapshot(SnapshotRequest {
                character: watson(),
                ..Default::default()
            })
            .await
            .expect_err("another CA's certificate");
        assert_ne!(status.code(), Code::Ok);
    }

    // Plain HTTP/2 to the TLS port: nothing.
    let plain = endpoint.replace("https://", "http://");
    if let Ok(plain) = Channel::from_shared(plain)
        .expect("endpoint")
        .connect()
        .await
    {
        AgentClient::new(plain)
            .snapshot(SnapshotRequest {
                character: watson(),
                ..Default::default()
            })
            .await
            .expect_err("plain text");
    }

    // The world's certificate: the agent answers.
    let mut as_world = cluster.agent("watson").client().await;
    let shard = as_world
        .snapshot(SnapshotRequest {
            character: watson(),
            ..Default::default()
        })
        .await
        .expect("the world's certificate")
        .into_inner();
    assert!(shard.profile.is_some(), "Watson is attached");
}
