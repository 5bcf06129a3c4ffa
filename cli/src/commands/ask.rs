use crate::options::ServerArg;
use anyhow::anyhow;
use clap::Args;
use dramatis_proto::v1::{AsOf, AskRequest, as_of};

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
    /// Ask the character as it stood at an earlier moment: `SEQ` (after that event of
    /// the log), or `scene:N` / `scene:ID` (at the end of the Nth scene played, or of
    /// that scene). It answers from what it had perceived by then, with the names it
    /// knew then. Read-only, on the live world: nothing is replayed or changed.
    #[arg(long, value_name = "SEQ|scene:N", value_parser = parse_as_of)]
    pub as_of: Option<AsOf>,
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
            as_of: args.as_of.clone(),
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
    } else if let Some(seq) = answer.as_of_seq {
        println!(
            "{} (as of event {seq}): {}",
            answer.character, answer.answer
        );
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

/// `--as-of`: a seq, or `scene:` and a scene's number or id.
fn parse_as_of(text: &str) -> Result<AsOf, String> {
    let text = text.trim();
    let point = if let Some(scene) = text.strip_prefix("scene:") {
        if scene.trim().is_empty() {
            return Err("scene: needs a scene's number or id (scene:3, scene:lab)".into());
        }
        as_of::Point::Scene(scene.trim().to_owned())
    } else {
        match text.parse::<u64>() {
            Ok(seq) if seq > 0 => as_of::Point::Seq(seq),
            _ => {
                return Err(format!(
                    "{}: give an event's seq (from 1) or scene:N",
                    dramatis_runtime::quote(text)
                ));
            }
        }
    };
    Ok(AsOf { point: Some(point) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn as_of_reads_a_seq_or_a_scene_and_names_what_it_cannot_read() {
        assert_eq!(
            parse_as_of("41").expect("seq").point,
            Some(as_of::Point::Seq(41))
        );
        assert_eq!(
            parse_as_of("scene:3").expect("scene").point,
            Some(as_of::Point::Scene("3".into()))
        );
        assert_eq!(
            parse_as_of("scene:lab").expect("scene id").point,
            Some(as_of::Point::Scene("lab".into()))
        );
        for bad in ["0", "-3", "scene:", "chapter two"] {
            let error = parse_as_of(bad).expect_err(bad);
            assert!(error.contains("scene"), "{bad}: {error}");
        }
    }
}
