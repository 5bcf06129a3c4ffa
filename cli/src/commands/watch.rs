use anyhow::anyhow;
use dramatis_proto::v1::WatchRequest;

use super::client::{describe, world_client};
use crate::args::WatchArgs;
use crate::printer::Printer;

pub async fn watch(args: WatchArgs) -> anyhow::Result<()> {
    let mut client = world_client(&args.server.server).await?;
    let mut stream = client
        .watch(WatchRequest {
            world_id: args.world,
            from_seq: args.from,
            no_follow: args.no_follow,
            pov: args.pov.unwrap_or_default(),
        })
        .await
        .map_err(|s| anyhow!("watch failed: {}", describe(&s)))?
        .into_inner();
    let mut printer = Printer::new(args.no_color);
    while let Some(item) = stream
        .message()
        .await
        .map_err(|s| anyhow!("stream broke: {}", describe(&s)))?
    {
        printer.item(item);
    }
    Ok(())
}
