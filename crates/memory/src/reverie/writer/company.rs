//! Who a scene's digest says the character was with.

use super::SceneDraft;

/// The others the character saw in the scene, by the names it knew them by, in id
/// order; in a crowd, where each line named only the few who mattered to it, with how
/// many more there were. `None` when it was alone.
pub(super) fn company(me: &str, draft: &SceneDraft) -> Option<String> {
    let mut others: Vec<&str> = draft
        .events
        .iter()
        .flat_map(|e| e.perceivers.iter())
        .filter(|p| p.as_str() != me)
        .map(String::as_str)
        .collect();
    others.sort_unstable();
    others.dedup();
    let names: Vec<&str> = others
        .iter()
        .map(|id| draft.names.get(*id).map_or(*id, String::as_str))
        .collect();
    if names.is_empty() {
        return None;
    }
    let crowd = draft
        .events
        .iter()
        .map(|e| e.perceivers.len().saturating_sub(1) + e.others as usize)
        .max()
        .unwrap_or(0);
    Some(match crowd.saturating_sub(names.len()) {
        0 => names.join(", "),
        more => format!("{} and {more} others", names.join(", ")),
    })
}
