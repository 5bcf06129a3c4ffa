//! Calls tests make of a world service and the checks of their answers.

use dramatis_proto::v1::world_client::WorldClient;

/// Asserts `result` is refused with `code`, a message containing `needle`, and no
/// more than 200 bytes of message (a reason and at most a short quote of the input).
pub fn assert_refused<T: std::fmt::Debug>(
    result: Result<T, tonic::Status>,
    code: tonic::Code,
    needle: &str,
) {
    let status = result.expect_err("request must be refused");
    assert_eq!(status.code(), code, "{status:?}");
    assert!(
        status.message().contains(needle),
        "{:?} lacks {needle:?}",
        status.message()
    );
    assert!(
        status.message().len() <= 200,
        "the refusal echoes too much: {} bytes",
        status.message().len()
    );
}

/// Advances world `id` through `world` until `until`; returns the events it produced.
pub async fn advance(
    world: &mut WorldClient<tonic::transport::Channel>,
    id: &str,
    until: dramatis_proto::v1::advance_request::Until,
) -> Vec<dramatis_proto::v1::Event> {
    world
        .advance(dramatis_proto::v1::AdvanceRequest {
            world_id: id.into(),
            until: Some(until),
        })
        .await
        .expect("advance")
        .into_inner()
        .events
}

/// The events of world `id` logged so far, as `pov` saw them (empty: all of them).
pub async fn replay_as(
    client: &mut WorldClient<tonic::transport::Channel>,
    id: &str,
    pov: &str,
) -> Vec<dramatis_proto::v1::Event> {
    use dramatis_proto::v1::{WatchRequest, watch_response};
    let mut stream = client
        .watch(WatchRequest {
            world_id: id.into(),
            from_seq: 1,
            no_follow: true,
            pov: pov.into(),
        })
        .await
        .expect("watch")
        .into_inner();
    let mut events = Vec::new();
    while let Some(item) = stream.message().await.expect("watch stream") {
        if let Some(watch_response::Item::Event(e)) = item.item {
            events.push(e);
        }
    }
    events
}

/// World `id` as `GetWorld` describes it.
pub async fn world_info(
    client: &mut WorldClient<tonic::transport::Channel>,
    id: &str,
) -> dramatis_proto::v1::WorldInfo {
    client
        .get_world(dramatis_proto::v1::GetWorldRequest {
            world_id: id.into(),
        })
        .await
        .expect("get world")
        .into_inner()
}
