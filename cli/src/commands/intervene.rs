//! `dramatis intervene`: the director puts one event into a world (a narration at a
//! place, a whisper to one character, a fact revealed to some, or an offstage character
//! brought in, from the cast or new to the story) and hears who perceived it.

use anyhow::anyhow;
use clap::Args;
use dramatis_proto::v1::{
    BringIn, InterveneRequest, Narrate, Reveal, SandboxCharacter, Whisper, intervene_request,
};

use crate::options::ServerArg;
use dramatis_runtime::client::{describe, world_client};

#[derive(Debug, Args)]
#[command(group(
    clap::ArgGroup::new("what").required(true).args(["narrate", "whisper", "reveal", "bring_in"])
))]
pub struct InterveneArgs {
    /// World id.
    pub world: String,
    /// Narrate TEXT at the place --at names: everyone there perceives it.
    #[arg(long, value_name = "TEXT", requires = "at")]
    pub narrate: Option<String>,
    /// Where a narration happens, or where a character brought in enters: a location's
    /// id or name.
    #[arg(long, value_name = "PLACE")]
    pub at: Option<String>,
    /// Whisper TEXT to CHARACTER (id, name or alias): only that character perceives it,
    /// as its own thought or a message it receives.
    #[arg(long, num_args = 2, value_names = ["CHARACTER", "TEXT"])]
    pub whisper: Option<Vec<String>>,
    /// Reveal TEXT to the characters --to names, and to no one else (a letter two of
    /// them read).
    #[arg(long, value_name = "TEXT", requires = "to")]
    pub reveal: Option<String>,
    /// Who a revelation reaches: ids, names or aliases, separated by commas.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub to: Vec<String>,
    /// Bring an offstage character of an open story in (id, name or alias), at --at or
    /// where its scenario says; those there see it arrive, described by --as. With
    /// --profile, CHARACTER is the id of a character new to the story, who joins its
    /// cast with the profile given and enters at --at.
    #[arg(long, value_name = "CHARACTER")]
    pub bring_in: Option<String>,
    /// How a character brought in enters, as those there see it (default: "… arrives
    /// at …").
    #[arg(long = "as", value_name = "TEXT", requires = "bring_in")]
    pub entrance: Option<String>,
    /// The profile of a character new to the story (who it is, what it wants to hide
    /// or find): its shard starts with this and nothing else.
    #[arg(long, value_name = "TEXT", requires_all = ["bring_in", "name", "at"])]
    pub profile: Option<String>,
    /// A newcomer's full name.
    #[arg(long, value_name = "NAME", requires = "profile")]
    pub name: Option<String>,
    /// Another name a newcomer answers to (repeat for more).
    #[arg(long = "alias", value_name = "NAME", requires = "profile")]
    pub aliases: Vec<String>,
    /// What others see of a newcomer before they know its name (default: "a
    /// stranger"); it must not hold the name.
    #[arg(long, value_name = "TEXT", requires = "profile")]
    pub known_as: Option<String>,
    /// How a newcomer speaks.
    #[arg(long, value_name = "TEXT", requires = "profile")]
    pub style: Option<String>,
    /// What a newcomer wants.
    #[arg(long, value_name = "TEXT", requires = "profile")]
    pub goal: Option<String>,
    /// The characters a newcomer knows by name: ids, separated by commas.
    #[arg(long, value_name = "A,B", value_delimiter = ',', requires = "profile")]
    pub knows: Vec<String>,
    /// Bring in a character its scenario marks interview-only (the dead, the absent):
    /// without this it is refused, since such a character is asked, never staged.
    #[arg(long, requires = "bring_in")]
    pub interview_only: bool,
    #[command(flatten)]
    pub server: ServerArg,
}

impl InterveneArgs {
    fn intervention(&self) -> intervene_request::Intervention {
        use intervene_request::Intervention;
        if let Some(text) = &self.narrate {
            return Intervention::Narrate(Narrate {
                location: self.at.clone().unwrap_or_default(),
                text: text.clone(),
            });
        }
        if let Some(character) = &self.bring_in {
            let location = self.at.clone().unwrap_or_default();
            let newcomer = self.profile.as_ref().map(|profile| SandboxCharacter {
                id: character.clone(),
                name: self.name.clone().unwrap_or_default(),
                aliases: self.aliases.clone(),
                profile: profile.clone(),
                style: self.style.clone().unwrap_or_default(),
                // Its home is where it enters (--at), which the world resolves.
                goal: self.goal.clone().unwrap_or_default(),
                known_as: self.known_as.clone().unwrap_or_default(),
                knows: self.knows.clone(),
                ..SandboxCharacter::default()
            });
            return Intervention::BringIn(BringIn {
                character: character.clone(),
                location,
                text: self.entrance.clone().unwrap_or_default(),
                newcomer,
                allow_interview_only: self.interview_only,
            });
        }
        if let Some([character, text]) = self.whisper.as_deref() {
            return Intervention::Whisper(Whisper {
                character: character.clone(),
                text: text.clone(),
            });
        }
        Intervention::Reveal(Reveal {
            characters: self.to.clone(),
            text: self.reveal.clone().unwrap_or_default(),
        })
    }
}

pub async fn intervene(args: InterveneArgs) -> anyhow::Result<()> {
    let mut client = world_client(&args.server.client_options()).await?;
    let answer = client
        .intervene(InterveneRequest {
            world_id: args.world.clone(),
            intervention: Some(args.intervention()),
        })
        .await
        .map_err(|s| anyhow!("the director's event was refused: {}", describe(&s)))?
        .into_inner();
    let event = answer.event.unwrap_or_default();
    let who = if event.perceivers.is_empty() {
        "no one".to_owned()
    } else {
        event.perceivers.join(", ")
    };
    println!("event {} · perceived by {who}", event.seq);
    Ok(())
}
