//! The prompt audit of a long-lived service: bounded by default, and read in pages
//! however much it holds. Before, `--audit-keep` was unset by default and `GetAudit`
//! sent every prompt of every character in one message, which failed ("decoded message
//! length too large") after about 700 interviews of one character.

mod common;

use dramatis_proto::v1::world_client::WorldClient;
use dramatis_proto::v1::{AskRequest, GetAuditRequest};

const WORLD: &str = "audited";

/// 1,100 interviews of Watson on `serve` as it starts by default: the audit keeps the
/// newest 1,000, `GetAudit` answers in pages of at most 100 (each far below 4 MB), and
/// the pages joined are every kept prompt once, newest last.
#[tokio::test]
async fn the_audit_is_bounded_by_default_and_read_in_pages() {
    let data = tempfile::tempdir().expect("temp dir");
    let (mut server, url) =
        common::serve_scripted_with(&data.path().to_string_lossy(), &["--agents", "world"]).await;
    let mut world = WorldClient::connect(url).await.expect("connect");
    world
        .create_world(common::scarlet(WORLD))
        .await
        .expect("create");
    let asks = 1_100;
    for n in 0..asks {
        world
            .ask(AskRequest {
                world_id: WORLD.into(),
                character: "watson".into(),
                question: format!("Question {n}: where were you today?"),
                recall_only: false,
                options: Vec::new(),
                as_of: None,
            })
            .await
            .unwrap_or_else(|s| panic!("ask {n}: {s}"));
    }
    let pages = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let audits = dramatis_proto::audit::read_all_pages(|page_token| {
        let mut client = world.clone();
        let request = GetAuditRequest {
            world_id: WORLD.into(),
            character: "watson".into(),
            page_token,
            ..GetAuditRequest::default()
        };
        let sizes = std::sync::Arc::clone(&pages);
        async move {
            let page = client.get_audit(request).await?.into_inner();
            sizes.lock().expect("sizes").push((
                page.audits.iter().map(|a| a.prompts.len()).sum::<usize>(),
                prost::Message::encoded_len(&page),
            ));
            Ok(page)
        }
    })
    .await
    .expect("the audit reads in pages");
    assert_eq!(audits.len(), 1, "Watson's audit");
    let prompts = &audits[0].prompts;
    assert_eq!(prompts.len(), 1_000, "the newest 1,000 are kept by default");
    let pages = pages.lock().expect("sizes").clone();
    assert!(pages.len() >= 10, "{pages:?}");
    for (count, bytes) in &pages {
        assert!(*count <= 100, "a page of {count} prompts");
        assert!(*bytes < 4 * 1024 * 1024, "a page of {bytes} bytes");
    }
    // The newest are kept, in order: the last prompt is the last question's.
    let last = prompts.last().expect("a prompt");
    assert!(
        last.prompt.contains(&format!("Question {}:", asks - 1)),
        "{}",
        &last.prompt[..last.prompt.len().min(300)]
    );
    assert!(
        !prompts.iter().any(|p| p.prompt.contains("Question 0: ")),
        "the oldest were dropped"
    );
    let _ = server.kill().await;
}
