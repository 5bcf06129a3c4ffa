//! `dramatis play`: a terminal client for `World.Play`.

use crate::options::ServerArg;
use anyhow::anyhow;
use clap::Args;
use dramatis_proto::v1::{
    ActionKind, PlayAction, PlayClaim, PlayRequest, WatchResponse, play_request, play_response,
    watch_response,
};
use tokio::io::AsyncBufReadExt as _;

use crate::printer::Printer;
use dramatis_runtime::client::{advance_to_end, describe, world_client};

#[derive(Debug, Args)]
pub struct PlayArgs {
    /// World id.
    pub world: String,
    /// Character id, name or alias.
    pub character: String,
    /// Seconds the world waits for your line before the agent acts.
    #[arg(long, default_value_t = 120)]
    pub timeout: u32,
    /// Do not advance the world (someone else drives it).
    #[arg(long)]
    pub no_advance: bool,
    #[command(flatten)]
    pub server: ServerArg,
    #[arg(long, env = "NO_COLOR", value_parser = clap::builder::FalseyValueParser::new())]
    pub no_color: bool,
}

/// A typed line as an action: `/do …`, `/go place`, `@id …`, or plain speech.
#[must_use]
pub fn parse_line(line: &str) -> Option<PlayAction> {
    let line = line.trim();
    if line.is_empty() {
        return None;
    }
    let action = |kind: ActionKind, text: &str| PlayAction {
        kind: kind as i32,
        text: text.trim().to_owned(),
        ..PlayAction::default()
    };
    if let Some(rest) = line.strip_prefix("/do ") {
        return Some(action(ActionKind::Action, rest));
    }
    if let Some(place) = line.strip_prefix("/go ") {
        let mut moving = action(
            ActionKind::Movement,
            &format!("sets off for {}", place.trim()),
        );
        moving.destination = place.trim().to_owned();
        return Some(moving);
    }
    if let Some(rest) = line.strip_prefix('@')
        && let Some((target, text)) = rest.split_once(' ')
    {
        let mut speech = action(ActionKind::Speech, text);
        speech.target = target.to_owned();
        return Some(speech);
    }
    Some(action(ActionKind::Speech, line))
}

pub async fn play(args: PlayArgs) -> anyhow::Result<()> {
    let mut client = world_client(&args.server.client_options()).await?;
    let (requests, inbound) = tokio::sync::mpsc::channel(16);
    requests
        .send(PlayRequest {
            item: Some(play_request::Item::Claim(PlayClaim {
                world_id: args.world.clone(),
                character: args.character.clone(),
                timeout_ms: args.timeout.saturating_mul(1000),
                from_seq: 1,
            })),
        })
        .await?;
    let mut stream = client
        .play(tokio_stream::wrappers::ReceiverStream::new(inbound))
        .await
        .map_err(|s| anyhow!("cannot play: {}", describe(&s)))?
        .into_inner();
    if !args.no_advance {
        let mut driver = client.clone();
        let world = args.world.clone();
        tokio::spawn(async move {
            if let Err(e) = advance_to_end(&mut driver, &world).await {
                eprintln!("the story stopped: {}", describe(&e.status));
            }
        });
    }
    // Typed lines go out as actions; the server says when one is out of turn.
    tokio::spawn(async move {
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(action) = parse_line(&line)
                && requests
                    .send(PlayRequest {
                        item: Some(play_request::Item::Action(action)),
                    })
                    .await
                    .is_err()
            {
                break;
            }
        }
    });
    let mut printer = Printer::new(args.no_color);
    while let Some(message) = stream
        .message()
        .await
        .map_err(|s| anyhow!("stream broke: {}", describe(&s)))?
    {
        match message.item {
            Some(play_response::Item::Claimed(id)) => eprintln!("You are playing {id}."),
            Some(play_response::Item::Event(event)) => printer.item(WatchResponse {
                item: Some(watch_response::Item::Event(event)),
            }),
            Some(play_response::Item::Token(token)) => printer.item(WatchResponse {
                item: Some(watch_response::Item::Token(token)),
            }),
            Some(play_response::Item::YourTurn(turn)) => {
                let frame = turn.frame.unwrap_or_default();
                let present: Vec<String> = frame
                    .present
                    .iter()
                    .map(|p| format!("{} (@{})", p.name, p.id))
                    .collect();
                eprintln!(
                    "\n>>> Your turn at {} (with {}; exits: {}). {} s. Type a line, `@id …`, `/do …` or `/go place`:",
                    frame.location_name,
                    if present.is_empty() {
                        "nobody".to_owned()
                    } else {
                        present.join(", ")
                    },
                    if frame.exits.is_empty() {
                        "none".to_owned()
                    } else {
                        frame.exits.join(", ")
                    },
                    turn.timeout_ms / 1000
                );
            }
            Some(play_response::Item::Notice(notice)) => eprintln!("({notice})"),
            // Only ClaimSeat sends a seat token; this client plays over one stream.
            Some(play_response::Item::Seat(_)) | None => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_lines_become_actions() {
        let speech = parse_line("Good evening.").expect("speech");
        assert_eq!(
            (speech.kind, speech.text.as_str()),
            (ActionKind::Speech as i32, "Good evening.")
        );
        let aimed = parse_line("@holmes You are late.").expect("aimed");
        assert_eq!(
            (aimed.target.as_str(), aimed.text.as_str()),
            ("holmes", "You are late.")
        );
        let deed = parse_line("/do lights the lamp").expect("action");
        assert_eq!(deed.kind, ActionKind::Action as i32);
        let leaving = parse_line("/go pawnshop").expect("move");
        assert_eq!(
            (leaving.kind, leaving.destination.as_str()),
            (ActionKind::Movement as i32, "pawnshop")
        );
        assert!(parse_line("   ").is_none());
    }
}
