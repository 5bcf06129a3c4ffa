//! Reading a whole prompt audit, which `GetAudit` sends in pages.

use std::future::Future;

use crate::v1::{CharacterAudit, GetAuditResponse};

/// Every page of an audit, joined: `fetch(token)` asks for the page at `token` (empty:
/// the first). A character's prompts that run over a page are joined under it.
pub async fn read_all_pages<F, Fut>(mut fetch: F) -> Result<Vec<CharacterAudit>, tonic::Status>
where
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<GetAuditResponse, tonic::Status>>,
{
    let mut all: Vec<CharacterAudit> = Vec::new();
    let mut token = String::new();
    loop {
        let page = fetch(token.clone()).await?;
        for audit in page.audits {
            match all.last_mut() {
                Some(last) if last.character == audit.character => {
                    last.prompts.extend(audit.prompts);
                }
                _ => all.push(audit),
            }
        }
        if page.next_page_token.is_empty() {
            return Ok(all);
        }
        if page.next_page_token == token {
            return Err(tonic::Status::internal(
                "the audit's next page is the page just read",
            ));
        }
        token = page.next_page_token;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::v1::PromptRecord;

    fn prompt(text: &str) -> PromptRecord {
        PromptRecord {
            prompt: text.into(),
            ..PromptRecord::default()
        }
    }

    #[test]
    fn pages_are_joined_per_character_in_order() {
        let pages = [
            ("", vec![("holmes", vec!["a", "b"])], "0:2"),
            (
                "0:2",
                vec![("holmes", vec!["c"]), ("watson", vec!["d"])],
                "1:1",
            ),
            ("1:1", vec![("watson", vec!["e"])], ""),
        ];
        let mut asked = Vec::new();
        let all = futures_lite_block_on(read_all_pages(|token| {
            asked.push(token.clone());
            let (_, audits, next) = pages
                .iter()
                .find(|(at, _, _)| *at == token)
                .expect("a token the server gave");
            let response = GetAuditResponse {
                audits: audits
                    .iter()
                    .map(|(c, ps)| CharacterAudit {
                        character: (*c).into(),
                        prompts: ps.iter().map(|p| prompt(p)).collect(),
                    })
                    .collect(),
                next_page_token: (*next).into(),
            };
            std::future::ready(Ok(response))
        }))
        .expect("read");
        assert_eq!(asked, ["", "0:2", "1:1"]);
        let flat: Vec<(String, Vec<String>)> = all
            .into_iter()
            .map(|a| {
                (
                    a.character,
                    a.prompts.into_iter().map(|p| p.prompt).collect(),
                )
            })
            .collect();
        assert_eq!(
            flat,
            [
                (
                    "holmes".to_owned(),
                    vec!["a".to_owned(), "b".into(), "c".into()]
                ),
                ("watson".to_owned(), vec!["d".to_owned(), "e".into()]),
            ]
        );
    }

    /// Polls a future that never waits (the pages here are ready at once).
    fn futures_lite_block_on<T>(future: impl Future<Output = T>) -> T {
        let mut future = std::pin::pin!(future);
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(value) => value,
            std::task::Poll::Pending => panic!("a ready page waited"),
        }
    }
}
