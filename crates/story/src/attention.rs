//! Bounded attention: in a crowd, a character's turn frame and its copy of each line
//! name at most a few others, the ones that matter to it, and count the rest. What it
//! perceives is unchanged (the log keeps every perceiver); only what is listed to it is
//! bounded, so a line costs the same in a market of a thousand as in a room of ten.
//!
//! Salience, in order: the one who last addressed the character and the scene's last
//! speaker (always listed), then the others who addressed it, those it addressed, the
//! scene's recent speakers, the people it knows by name (the more lines exchanged with
//! them the sooner), and the rest by distance. A place has no positions inside it, so
//! distance is the distance in the cast list, which the scenario's author orders (a
//! generated crowd lists each district's people together).

use std::collections::{BTreeMap, VecDeque};

use dramatis_proto::v1::{Event, EventKind};

pub use dramatis_scenario::{DEFAULT_ATTENTION, MIN_ATTENTION};

/// Addressers (and addressees) remembered per character, latest first.
const REMEMBERED: usize = 4;

/// Speakers of the open scene remembered, latest first.
const RECENT_SPEAKERS: usize = 32;

/// Who each character has lately dealt with: what salience is ranked from. Folded from
/// events only (the world's state), so replaying the log rebuilds it, and every update
/// is bounded: nothing here grows with the length of the story except the pairs of
/// people who ever spoke to each other.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attention {
    /// The open scene's speakers, latest first, each once, with the seq of their last
    /// line.
    recent: VecDeque<(String, u64)>,
    /// Character -> those who addressed it, latest first.
    addressed_by: BTreeMap<String, VecDeque<String>>,
    /// Character -> those it addressed, latest first.
    addressed: BTreeMap<String, VecDeque<String>>,
    /// Character -> other -> lines between the two (either way).
    ties: BTreeMap<String, BTreeMap<String, u32>>,
    /// Character -> the seq since which it has been where it is.
    arrived: BTreeMap<String, u64>,
}

/// Who is listed and how many more are there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed<'a> {
    /// At most the limit, most salient first.
    pub named: Vec<&'a str>,
    /// Others present who are only counted.
    pub more: usize,
}

/// Puts `who` first in `list`, once, keeping at most `cap`.
fn remember(list: &mut VecDeque<String>, who: &str, cap: usize) {
    list.retain(|w| w != who);
    list.push_front(who.to_owned());
    list.truncate(cap);
}

/// Salience tiers, most salient first.
const PINNED: u8 = 0;
const ADDRESSED_ME: u8 = 1;
const I_ADDRESSED: u8 = 2;
const RECENT: u8 = 3;
const KNOWN: u8 = 4;
const REST: u8 = 5;

impl Attention {
    /// Folds one event in.
    pub fn apply(&mut self, event: &Event) {
        match event.kind() {
            EventKind::SceneStart => {
                self.recent.clear();
                for who in &event.perceivers {
                    self.arrived.insert(who.clone(), event.seq);
                }
            }
            EventKind::Movement if event.travel_rounds == 0 => {
                self.arrived.insert(event.speaker.clone(), event.seq);
            }
            _ => {}
        }
        if event.turn == 0 || event.speaker.is_empty() {
            return;
        }
        let speaker = event.speaker.as_str();
        self.recent.retain(|(who, _)| who != speaker);
        self.recent.push_front((speaker.to_owned(), event.seq));
        self.recent.truncate(RECENT_SPEAKERS);
        let target = event.target.as_str();
        if target.is_empty() || target == speaker || !event.perceivers.iter().any(|p| p == target) {
            return;
        }
        remember(
            self.addressed_by.entry(target.to_owned()).or_default(),
            speaker,
            REMEMBERED,
        );
        remember(
            self.addressed.entry(speaker.to_owned()).or_default(),
            target,
            REMEMBERED,
        );
        for (a, b) in [(speaker, target), (target, speaker)] {
            *self
                .ties
                .entry(a.to_owned())
                .or_default()
                .entry(b.to_owned())
                .or_default() += 1;
        }
    }

    /// Lines exchanged between `me` and `other`.
    #[must_use]
    pub fn tie(&self, me: &str, other: &str) -> u32 {
        self.ties
            .get(me)
            .and_then(|t| t.get(other))
            .copied()
            .unwrap_or(0)
    }

    /// The scene's speakers `me` heard since it came to where it is, latest first.
    fn heard<'s>(&'s self, me: &str) -> impl Iterator<Item = &'s str> {
        let since = self.arrived.get(me).copied().unwrap_or(0);
        self.recent
            .iter()
            .take_while(move |(_, seq)| *seq >= since)
            .map(|(who, _)| who.as_str())
    }

    /// The salience key of `other` for `me` (smaller: more salient).
    fn key(&self, me: &str, other: &str, pinned: &[&str], cast: &Cast<'_>) -> (u8, u64, u64) {
        let distance = cast.distance(me, other);
        let at =
            |list: Option<&VecDeque<String>>| list.and_then(|l| l.iter().position(|w| w == other));
        if let Some(i) = pinned.iter().position(|p| *p == other) {
            return (PINNED, i as u64, distance);
        }
        if let Some(i) = at(self.addressed_by.get(me)) {
            return if i == 0 {
                (PINNED, pinned.len() as u64, distance)
            } else {
                (ADDRESSED_ME, i as u64, distance)
            };
        }
        if let Some(i) = self.heard(me).position(|w| w == other) {
            return if i == 0 {
                (PINNED, pinned.len() as u64 + 1, distance)
            } else if let Some(j) = at(self.addressed.get(me)) {
                (I_ADDRESSED, j as u64, distance)
            } else {
                (RECENT, i as u64, distance)
            };
        }
        if let Some(j) = at(self.addressed.get(me)) {
            return (I_ADDRESSED, j as u64, distance);
        }
        if (cast.knows)(other) {
            return (KNOWN, u64::from(u32::MAX - self.tie(me, other)), distance);
        }
        (REST, distance, 0)
    }

    /// The at most `limit` of `people` (`me` left out) that matter most to `me`, most
    /// salient first, with `pinned` first of all, then the one who last addressed `me`
    /// and the scene's last speaker; and how many more there are. Nothing is ranked when
    /// everyone fits: they come back in their own order.
    #[must_use]
    pub fn rank<'a>(
        &self,
        me: &str,
        people: &[&'a str],
        pinned: &[&str],
        cast: &Cast<'_>,
        limit: usize,
    ) -> Listed<'a> {
        let others: Vec<&'a str> = people.iter().copied().filter(|p| *p != me).collect();
        if others.len() <= limit {
            return Listed {
                named: others,
                more: 0,
            };
        }
        let mut keyed: Vec<((u8, u64, u64), &'a str)> = others
            .iter()
            .map(|other| (self.key(me, other, pinned, cast), *other))
            .collect();
        let more = keyed.len() - limit;
        if limit > 0 {
            keyed.select_nth_unstable(limit - 1);
        }
        keyed.truncate(limit);
        keyed.sort_unstable();
        Listed {
            named: keyed.into_iter().map(|(_, who)| who).collect(),
            more,
        }
    }
}

/// What ranking needs of the cast, from the view of one character: where each person
/// stands in the cast list, and whether that character knows another by name.
pub struct Cast<'a> {
    pub position: &'a dyn Fn(&str) -> Option<usize>,
    pub knows: &'a dyn Fn(&str) -> bool,
}

impl Cast<'_> {
    /// How far apart `a` and `b` stand in the cast list: for someone not in the cast
    /// (the narrator), how far down the list `b` is; for `b` not in it, furthest.
    fn distance(&self, a: &str, b: &str) -> u64 {
        match ((self.position)(a), (self.position)(b)) {
            (Some(a), Some(b)) => a.abs_diff(b) as u64,
            (None, Some(b)) => b as u64,
            (_, None) => u64::MAX,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64, speaker: &str, target: &str, perceivers: &[String]) -> Event {
        Event {
            seq,
            kind: EventKind::Speech as i32,
            turn: 1,
            speaker: speaker.into(),
            target: target.into(),
            perceivers: perceivers.to_vec(),
            ..Event::default()
        }
    }

    fn scene_start(seq: u64, perceivers: &[String]) -> Event {
        Event {
            seq,
            kind: EventKind::SceneStart as i32,
            perceivers: perceivers.to_vec(),
            ..Event::default()
        }
    }

    fn crowd(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("p{i:03}")).collect()
    }

    fn position(id: &str) -> Option<usize> {
        id.strip_prefix('p').and_then(|n| n.parse().ok())
    }

    #[test]
    fn in_a_crowd_the_addresser_and_the_last_speaker_are_always_named() {
        let everyone = crowd(200);
        let people: Vec<&str> = everyone.iter().map(String::as_str).collect();
        let nobody = |_: &str| false;
        let cast = Cast {
            position: &position,
            knows: &nobody,
        };
        let mut attention = Attention::default();
        attention.apply(&scene_start(1, &everyone));
        // Far from p000 in the cast: p150 addresses it, then p120 and others speak.
        attention.apply(&line(2, "p150", "p000", &everyone));
        for (seq, speaker) in (3..).zip(["p190", "p180", "p170", "p160", "p120"]) {
            attention.apply(&line(seq, speaker, "", &everyone));
        }
        for limit in [3, 4, 12] {
            let listed = attention.rank("p000", &people, &[], &cast, limit);
            assert_eq!(listed.named.len(), limit);
            assert_eq!(listed.more, 199 - limit);
            assert_eq!(&listed.named[..2], ["p150", "p120"], "limit {limit}");
        }
        let listed = attention.rank("p000", &people, &[], &cast, 12);
        // Then the scene's other speakers, latest first, then the nearest in the cast.
        assert_eq!(
            listed.named,
            [
                "p150", "p120", "p160", "p170", "p180", "p190", "p001", "p002", "p003", "p004",
                "p005", "p006"
            ]
        );
    }

    #[test]
    fn known_people_come_before_strangers_and_those_spoken_with_most_first() {
        let everyone = crowd(40);
        let people: Vec<&str> = everyone.iter().map(String::as_str).collect();
        let knows = |id: &str| matches!(id, "p030" | "p036");
        let cast = Cast {
            position: &position,
            knows: &knows,
        };
        let mut attention = Attention::default();
        // In an earlier scene p035 addressed p010, which spoke to p036 and then to four
        // others (p036 is no longer among the last it addressed, but they spoke).
        attention.apply(&line(1, "p035", "p010", &everyone));
        attention.apply(&line(2, "p010", "p036", &everyone));
        for (seq, other) in (3..).zip(["p001", "p002", "p003", "p004"]) {
            attention.apply(&line(seq, "p010", other, &everyone));
        }
        attention.apply(&scene_start(7, &everyone));
        let listed = attention.rank("p010", &people, &["p039"], &cast, 9);
        // Pinned, the last addresser, those it addressed (latest first), the known by
        // lines exchanged, then the nearest stranger.
        assert_eq!(
            listed.named,
            [
                "p039", "p035", "p004", "p003", "p002", "p001", "p036", "p030", "p009"
            ]
        );
        assert_eq!(listed.more, 30);
        assert_eq!(attention.tie("p036", "p010"), 1);
    }

    #[test]
    fn a_speaker_heard_before_one_arrived_is_not_recent_to_it() {
        let everyone = crowd(30);
        let people: Vec<&str> = everyone.iter().map(String::as_str).collect();
        let nobody = |_: &str| false;
        let cast = Cast {
            position: &position,
            knows: &nobody,
        };
        let mut attention = Attention::default();
        attention.apply(&line(1, "p025", "", &everyone));
        attention.apply(&Event {
            seq: 2,
            kind: EventKind::Movement as i32,
            speaker: "p000".into(),
            ..Event::default()
        });
        let listed = attention.rank("p000", &people, &[], &cast, 3);
        assert_eq!(listed.named, ["p001", "p002", "p003"]);
        let seen = attention.rank("p001", &people, &[], &cast, 3);
        assert_eq!(seen.named, ["p025", "p000", "p002"]);
    }

    #[test]
    fn everyone_fits_under_the_limit_in_their_own_order() {
        let people = ["c", "me", "a", "b"];
        let nobody = |_: &str| false;
        let cast = Cast {
            position: &|_: &str| None,
            knows: &nobody,
        };
        let listed = Attention::default().rank("me", &people, &[], &cast, 3);
        assert_eq!(listed.named, ["c", "a", "b"]);
        assert_eq!(listed.more, 0);
    }
}
