//! A malformed call to an agent is refused for what is wrong with it, before the agent
//! looks for the character it names: a caller learns that its request is wrong, not
//! that some character is missing.

mod common;

use dramatis_proto::v1::{AnswerRequest, CharacterRef, Event, PerceiveRequest};
use dramatis_runtime::Shutdown;
use tonic::Code;

fn nobody() -> Option<CharacterRef> {
    Some(CharacterRef {
        world_id: "w".into(),
        character_id: "nobody".into(),
    })
}

#[tokio::test]
async fn a_malformed_call_is_refused_as_such_before_the_character_is_looked_up() {
    let data = tempfile::tempdir().expect("tempdir");
    let shutdown = Shutdown::new();
    let (mut agent, _served) = common::agent_on(data.path(), &shutdown, None).await;

    let foreign = agent
        .perceive(PerceiveRequest {
            character: nobody(),
            events: vec![Event {
                seq: 1,
                world_id: "elsewhere".into(),
                ..Event::default()
            }],
        })
        .await
        .expect_err("an event of another world");
    assert_eq!(foreign.code(), Code::InvalidArgument, "{foreign:?}");
    assert!(foreign.message().contains("belongs to world \"elsewhere\""));

    let empty = agent
        .answer(AnswerRequest {
            character: nobody(),
            question: "   ".into(),
            ..AnswerRequest::default()
        })
        .await
        .expect_err("an empty question");
    assert_eq!(empty.code(), Code::InvalidArgument, "{empty:?}");
    assert!(empty.message().contains("question must not be empty"));

    // Well formed, the same calls find no such character.
    let missing = agent
        .perceive(PerceiveRequest {
            character: nobody(),
            events: Vec::new(),
        })
        .await
        .expect_err("not attached");
    assert_eq!(missing.code(), Code::NotFound, "{missing:?}");
    shutdown.trigger();
}
