//! Asking every item of a probe set at its story position: walking the story forward
//! to each (`Via::Replay`), or playing it to its end and asking each item as of its
//! position (`Via::Ask`); each item's gold re-derived there, and what changed.

use anyhow::bail;
use dramatis_scenario::Scenario;

use crate::answerers::Answerer;
use crate::kbf::Probe;
use crate::probes::{derive_gold, truths};
use crate::walk::{Run, Source, Walk, sources};

/// An item whose gold at its position differs from the file's.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GoldChange {
    pub id: String,
    pub character: String,
    pub at: u32,
    pub was: char,
    pub now: char,
    /// The texts of those two options.
    pub was_text: String,
    pub now_text: String,
}

/// An item whose gold could not be re-derived at its position, because its true option
/// is not known: it has no `truth`, and no KRf item about its fact has an option with
/// the same text. It is scored on the file's gold.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Underived {
    pub id: String,
    pub character: String,
    pub fact: Option<String>,
}

/// The outcome of asking every item.
#[derive(Debug, Clone, Default)]
pub struct Asked {
    /// The items as scored: their gold re-derived at their positions.
    pub probes: Vec<Probe>,
    pub letters: Vec<Option<char>>,
    pub changed: Vec<GoldChange>,
    pub underived: Vec<Underived>,
    /// The items' indices in the order they were asked.
    pub order: Vec<usize>,
    /// Turns the whole story takes (it is played to its end after the last item).
    pub story_turns: u32,
}

/// [`ask_via`] [`Via::Replay`].
pub async fn ask_at_positions(
    walk: &mut Walk,
    scenario: &Scenario,
    probes: &[Probe],
    answerer: &mut dyn Answerer,
    each: &(dyn Fn() + Sync),
) -> anyhow::Result<Asked> {
    ask_via(walk, scenario, probes, answerer, (Via::Replay, each)).await
}

/// How an item reaches its story position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Via {
    /// The story is walked forward to the item's position, and the item asked there.
    #[default]
    Replay,
    /// The story is played to its end first; each item is asked `as_of` the last event
    /// of its position (`Ask.as_of`), on the finished world, as a user would.
    Ask,
}

/// Asks every item of `probes` at its position, walking the story forward once (items in
/// order of position; those without one at the end), or, `via` [`Via::Ask`], playing it
/// to its end and asking each item as of its position. Line items check that the replay
/// logged the line they were made from. `each` is called after every item.
pub async fn ask_via(
    walk: &mut Walk,
    scenario: &Scenario,
    probes: &[Probe],
    answerer: &mut dyn Answerer,
    (via, each): (Via, &(dyn Fn() + Sync)),
) -> anyhow::Result<Asked> {
    let mut order: Vec<usize> = (0..probes.len()).collect();
    order.sort_by_key(|i| probes[*i].at.unwrap_or(u32::MAX));
    let truths = truths(probes);
    let mut scored: Vec<Option<Probe>> = vec![None; probes.len()];
    let mut letters = vec![None; probes.len()];
    let mut changed = Vec::new();
    let mut underived = Vec::new();
    let mut all: Vec<Source> = Vec::new();
    let mut known_at = None;
    if via == Via::Ask {
        walk.play_to_end().await?;
    }
    for &i in &order {
        let probe = &probes[i];
        // Via ask, the run cut back to the item's position; via replay, the walk's own.
        let cut;
        let run: &Run = match via {
            Via::Replay => {
                walk.advance_to(probe.at).await?;
                &walk.run
            }
            Via::Ask => {
                cut = walk.run.until(probe.at.unwrap_or(u32::MAX));
                walk.as_of = cut.log.last().map(|(_, e)| e.seq);
                &cut
            }
        };
        if let Some(at) = probe.at
            && run.turns < at
        {
            bail!(
                "item {}: the story ended after {} turns, before position {at}; the \
                 probes come from another run (replay them on the model they were played \
                 with)",
                probe.id,
                run.turns
            );
        }
        check_replay(run, probe)?;
        let position = run.turns;
        if known_at != Some(position) {
            all = sources(scenario, run);
            known_at = Some(position);
        }
        let derived = derive_gold(probe, scenario, &all, position, &truths);
        if derived.is_none() {
            underived.push(Underived {
                id: probe.id.clone(),
                character: probe.character.clone(),
                fact: probe.fact.clone(),
            });
        }
        let gold = derived.unwrap_or(probe.gold);
        if gold != probe.gold {
            let text = |letter: char| probe.options.get(&letter).cloned().unwrap_or_default();
            changed.push(GoldChange {
                id: probe.id.clone(),
                character: probe.character.clone(),
                at: position,
                was: probe.gold,
                now: gold,
                was_text: text(probe.gold),
                now_text: text(gold),
            });
        }
        letters[i] = answerer.answer(walk, &all, probe).await?;
        scored[i] = Some(probe.with_gold(gold));
        each();
    }
    walk.as_of = None;
    // The story's length places each item in its third.
    walk.play_to_end().await?;
    Ok(Asked {
        probes: scored.into_iter().flatten().collect(),
        letters,
        changed,
        underived,
        order,
        story_turns: walk.run.turns,
    })
}

/// A line item's line, once the replay has logged that far, must have the same text.
fn check_replay(run: &Run, probe: &Probe) -> anyhow::Result<()> {
    let (Some(seq), Some(text)) = (probe.line, &probe.line_text) else {
        return Ok(());
    };
    if run.log.last().is_none_or(|(_, e)| e.seq < seq) {
        return Ok(());
    }
    let logged = run
        .log
        .iter()
        .find(|(_, e)| e.seq == seq)
        .map(|(_, e)| e.text.as_str());
    if logged != Some(text.as_str()) {
        let short = |t: &str| t.chars().take(60).collect::<String>();
        bail!(
            "item {}: the replay logged {:?} as line {seq}, the probes expect {:?}; the \
             probes were made from a run on {} and must be replayed on it (a story a \
             model played is replayed from its log: `eval probes --from-log WORLD`, then \
             `eval kbf --from-log WORLD`)",
            probe.id,
            logged.map(short).unwrap_or_default(),
            short(text),
            probe.played_with.as_deref().unwrap_or("another model")
        );
    }
    Ok(())
}
