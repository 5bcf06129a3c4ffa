use anyhow::anyhow;
use dramatis_proto::v1::AskRequest;

use super::client::{describe, world_client};
use crate::args::AskArgs;

pub async fn ask(args: AskArgs) -> anyhow::Result<()> {
    let mut client = world_client(&args.server.server).await?;
    let answer = client
        .ask(AskRequest {
            world_id: args.world,
            character: args.character,
            question: args.question,
            recall_only: args.recall,
        })
        .await
        .map_err(|s| anyhow!("ask failed: {}", describe(&s)))?
        .into_inner();
    if args.recall {
        if answer.recalled.is_empty() {
            println!("{}: nothing comes to mind", answer.character);
        }
        for item in &answer.recalled {
            println!("[{} {}] {}", item.module, item.layer, item.text);
        }
        return Ok(());
    }
    println!("{}: {}", answer.character, answer.answer);
    Ok(())
}
