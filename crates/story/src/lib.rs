//! The story's pure logic: the world's state and how events change it, who acts next,
//! who perceives what, the events a step produces, and the frame a character acts in.
//! Nothing here does I/O or reads a clock, and the only lock is `SharedScenario`'s (held to
//! clone or swap it), so all of it is unit-tested.

pub mod attention;
pub mod drafts;
pub mod frame;
pub mod names;
pub mod narration_guard;
pub mod perception;
pub mod scheduler;
pub mod state;
pub mod view;

/// Small scenarios for the unit tests of this module.
#[cfg(test)]
pub(crate) mod test_scenarios {
    use std::path::Path;

    use dramatis_scenario::Scenario;

    const PLACES_AND_PEOPLE: &str = r#"
[[locations]]
id = "lab"
name = "the Lab"
description = "Bottles and burners."

[[locations]]
id = "bar"
name = "the Bar"
description = "Brass and noise."

[[locations]]
id = "cellar"
name = "the Cellar"
description = "Damp."

[[paths]]
from = "lab"
to = "bar"
distance = 2

[[characters]]
id = "holmes"
name = "Sherlock Holmes"
aliases = ["Holmes"]
profile = "A consulting detective."
location = "lab"
known_as = "a tall young man with a test-tube"

[[characters]]
id = "watson"
name = "John Watson"
aliases = ["Watson"]
profile = "An army doctor."
location = "bar"
knows = ["lestrade"]

[[characters]]
id = "lestrade"
name = "Inspector Lestrade"
aliases = ["the inspector"]
profile = "A Scotland Yard man."
location = "bar"
"#;

    /// Holmes at the lab; Watson and Lestrade at the bar, two steps away; a cellar with
    /// no path to it. One scene at the lab for Holmes and Watson.
    pub(crate) fn scripted() -> Scenario {
        let text = format!(
            r#"version = 1
name = "t"
title = "T"
{PLACES_AND_PEOPLE}
[[scenes]]
id = "meeting"
location = "lab"
cast = ["holmes", "watson"]
beat = "They meet."
max_turns = 4
opening = "A smell of chemicals."

[scenes.directions]
watson = "You need rooms."
"#
        );
        Scenario::parse(&text, Path::new("scripted.toml")).expect("test scenario parses")
    }

    /// The same people and places as an open story of three rounds.
    pub(crate) fn open_story() -> Scenario {
        let text = format!(
            r#"version = 1
name = "o"
title = "O"

[open]
premise = "Something is afoot."
opening = "Fog on the river."
opening_location = "bar"
rounds = 3
scene_turns = 5
{PLACES_AND_PEOPLE}"#
        );
        Scenario::parse(&text, Path::new("open.toml")).expect("test scenario parses")
    }
}
