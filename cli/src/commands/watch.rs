use crate::options::ServerArg;
use anyhow::anyhow;
use clap::Args;
use dramatis_proto::v1::WatchRequest;

use crate::printer::Printer;
use dramatis_runtime::client::{describe, world_client};

#[derive(Debug, Args)]
pub struct WatchArgs {
    /// World id.
    pub world: String,
    /// First sequence number to show.
    #[arg(long, default_value_t = 1)]
    pub from: u64,
    /// Print what is logged so far and exit instead of following.
    #[arg(long)]
    pub no_follow: bool,
    /// Only what this character perceived (id, name or alias), as its agent received it.
    #[arg(long)]
    pub pov: Option<String>,
    #[command(flatten)]
    pub server: ServerArg,
    #[arg(long, env = "NO_COLOR", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_color: bool,
}

pub async fn watch(args: WatchArgs) -> anyhow::Result<()> {
    let mut client = world_client(&args.server.client_options()).await?;
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
