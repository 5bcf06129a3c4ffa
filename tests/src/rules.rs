//! Scripted-model rules the tests share.

use dramatis_llm::ScriptRule;

/// Holmes, in the shipped scenario's second scene (the laboratory, where he has just
/// perfected his test), says `text` to Watson. `text` must need no JSON escaping.
#[must_use]
pub fn holmes_in_the_lab_says(text: &str) -> ScriptRule {
    ScriptRule {
        when: vec![
            "Character: Sherlock Holmes".into(),
            "perfected your test".into(),
        ],
        reply: format!(
            r#"{{"kind":"speech","target":"watson","text":"{text}","thought":"","destination":""}}"#
        ),
    }
}
