use crate::options::ServerArg;
use anyhow::anyhow;
use clap::Args;
use dramatis_proto::v1::AskRequest;

use dramatis_runtime::client::{describe, world_client};

#[derive(Debug, Args)]
pub struct AskArgs {
    /// World id.
    pub world: String,
    /// Character id, name or alias.
    pub character: String,
    /// The question.
    pub question: String,
    /// Show what the question brings to the character's mind (each item with its memory
    /// module and layer) instead of an answer; no answer call is made.
    #[arg(long)]
    pub recall: bool,
    /// A multiple-choice question: give each option with its own `--option` (at most
    /// 8). The character says which one it holds evidence for, or refuses.
    #[arg(long = "option", value_name = "TEXT")]
    pub options: Vec<String>,
    #[command(flatten)]
    pub server: ServerArg,
}

pub async fn ask(args: AskArgs) -> anyhow::Result<()> {
    let mut client = world_client(&args.server.client_options()).await?;
    let answer = client
        .ask(AskRequest {
            world_id: args.world,
            character: args.character,
            question: args.question,
            recall_only: args.recall,
            options: args.options.clone(),
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
    } else {
        println!("{}: {}", answer.character, answer.answer);
    }
    if !args.options.is_empty() {
        let chosen = answer
            .choice
            .and_then(|c| args.options.get(usize::try_from(c).ok()?));
        match chosen {
            Some(option) => println!("evidence for: {option}"),
            None => println!("evidence for: none of the options"),
        }
    }
    Ok(())
}
