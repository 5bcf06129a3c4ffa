//! Cloze items rewritten as questions in other words (`eval probes --paraphrase`).
//!
//! A generated item blanks a word out of its source, so the item shares every other
//! word with the memory that answers it: recall by words finds it trivially. A person
//! would ask in other words. A language model rewrites each item's statement as a
//! question. The rewrite is kept only when it is a question, has no blank left, and
//! does not contain the answer (the true option or any of the item's evidence words);
//! otherwise the model is asked once more, told what was wrong, and if that fails too
//! the item keeps its cloze form. Options, gold, position and evidence never change:
//! only the wording of the question does.

use dramatis_llm::{ChatMessage, CompletionRequest, LanguageModel, ResponseSchema, parse_json};
use serde::Deserialize;
use serde_json::json;

use dramatis_memory::modules::is_stop_word;

use crate::kbf::Probe;
use crate::words::contains_word;

/// Name of the rewrite schema.
pub const PARAPHRASE_SCHEMA: &str = "paraphrase";

/// How many items were rewritten, and how many kept their cloze form (with why).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rewritten {
    pub rewritten: usize,
    /// Items whose every rewrite gave the answer away, or was no question.
    pub kept: Vec<(String, String)>,
    /// Model calls and tokens spent.
    pub calls: u64,
    pub prompt_tokens: u64,
}

#[derive(Debug, Deserialize)]
struct Reply {
    #[serde(default)]
    question: String,
}

/// Rewrites every item's question in other words (see the module docs). The cloze the
/// item had is kept in `cloze`.
pub async fn paraphrase(
    items: &mut [Probe],
    model: &dyn LanguageModel,
    mut progress: impl FnMut(usize),
) -> anyhow::Result<Rewritten> {
    let mut out = Rewritten::default();
    for (done, item) in items.iter_mut().enumerate() {
        let answer = item
            .truth
            .and_then(|t| item.options.get(&t))
            .cloned()
            .unwrap_or_default();
        let mut problem: Option<String> = None;
        let mut kept = true;
        for _ in 0..2 {
            let request = request(item, &answer, problem.as_deref());
            let completion = model.complete(&request, None).await?;
            out.calls += 1;
            out.prompt_tokens += u64::from(completion.prompt_tokens);
            let question = parse_json::<Reply>(&completion.text, |_| true)
                .map(|(r, _)| r.question.trim().to_owned())
                .unwrap_or_default();
            match check(&question, &answer, &item.evidence) {
                Ok(()) => {
                    item.cloze = Some(std::mem::replace(&mut item.question, question));
                    out.rewritten += 1;
                    kept = false;
                    break;
                }
                Err(why) => problem = Some(why),
            }
        }
        if kept {
            out.kept
                .push((item.id.clone(), problem.unwrap_or_default()));
        }
        progress(done + 1);
    }
    Ok(out)
}

/// Whether `question` is a usable rewrite: a question, no blank, no answer in it.
fn check(question: &str, answer: &str, evidence: &[String]) -> Result<(), String> {
    if question.is_empty() {
        return Err("the reply held no question".into());
    }
    if !question.ends_with('?') {
        return Err(format!("{question:?} is not a question"));
    }
    if question.contains("___") {
        return Err(format!("{question:?} still has a blank"));
    }
    let answer_words = crate::words::tokens(answer);
    let gives_away = answer_words
        .iter()
        .map(|t| t.word)
        .chain(evidence.iter().map(String::as_str))
        .filter(|w| w.chars().count() > 2 && !is_stop_word(&w.to_lowercase()))
        .find(|w| contains_word(question, w));
    match gives_away {
        Some(word) => Err(format!("{question:?} uses the answer word {word:?}")),
        None => Ok(()),
    }
}

fn request(item: &Probe, answer: &str, problem: Option<&str>) -> CompletionRequest {
    let system = "You rewrite fill-in-the-blank statements from a story as questions a \
        reader would ask. The question asks for what the blank hides without saying it. \
        Use other words than the statement wherever you can: synonyms, a description \
        instead of a name, another order. Reply with JSON.";
    let statement = item
        .question
        .split_once('"')
        .and_then(|(_, rest)| rest.rsplit_once('"'))
        .map_or(item.question.as_str(), |(inner, _)| inner);
    let mut user = format!("Statement: {statement}\nThe blank hides: {answer}");
    if let Some(problem) = problem {
        user.push_str("\nYour last question was unusable: ");
        user.push_str(problem);
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "question": {"type": "string", "minLength": 8, "maxLength": 300}
        },
        "required": ["question"]
    });
    CompletionRequest::new(vec![ChatMessage::system(system), ChatMessage::user(user)])
        .with_max_tokens(120)
        .with_temperature(0.0)
        .with_schema(ResponseSchema {
            name: PARAPHRASE_SCHEMA.into(),
            schema,
        })
}

#[cfg(test)]
mod tests {
    use dramatis_llm::{ScriptRule, ScriptedModel};

    use super::*;

    fn cloze(statement: &str, answer: &str) -> Probe {
        Probe {
            id: statement.to_owned(),
            truth: Some('A'),
            evidence: vec![answer.to_owned()],
            ..Probe::multiple_choice(
                "watson",
                &format!("Fill the blank from your own knowledge: \"{statement}\""),
                [answer, "Kandahar", "Plymouth", "Bombay"],
                'A',
            )
        }
    }

    fn rule(when: &[&str], question: &str) -> ScriptRule {
        ScriptRule {
            when: when.iter().map(|w| (*w).to_owned()).collect(),
            reply: serde_json::json!({ "question": question }).to_string(),
        }
    }

    /// A rewrite is kept when it is a question without the answer; one that gives the
    /// answer away is asked for again with the reason, and an item whose every rewrite
    /// fails keeps its cloze, counted. Options and gold never change.
    #[tokio::test]
    async fn items_are_rewritten_without_their_answer_or_keep_their_cloze() {
        let model = ScriptedModel::new(vec![
            rule(
                &["Statement: I was hit at ____."],
                "Where was the surgeon hurt?",
            ),
            // The retry, told why, gets it right.
            rule(
                &["Statement: I landed at ____.", "uses the answer word"],
                "At which port did he come ashore?",
            ),
            rule(
                &["Statement: I landed at ____."],
                "Did he land at Portsmouth?",
            ),
            // Never a question.
            rule(&["Statement: The rent is ____."], "The rent is due."),
        ]);
        let mut items = vec![
            cloze("I was hit at ____.", "Maiwand"),
            cloze("I landed at ____.", "Portsmouth"),
            cloze("The rent is ____.", "Thursday"),
        ];
        let before: Vec<_> = items.iter().map(|i| (i.options.clone(), i.gold)).collect();
        let mut seen = Vec::new();
        let out = paraphrase(&mut items, &model, |n| seen.push(n))
            .await
            .expect("paraphrase");
        assert_eq!(seen, [1, 2, 3]);
        assert_eq!(out.rewritten, 2);
        assert_eq!(out.calls, 1 + 2 + 2);
        assert_eq!(items[0].question, "Where was the surgeon hurt?");
        assert_eq!(items[1].question, "At which port did he come ashore?");
        assert!(
            items[0]
                .cloze
                .as_deref()
                .is_some_and(|c| c.contains("I was hit at ____."))
        );
        assert!(items[2].question.contains("The rent is ____."));
        assert_eq!(items[2].cloze, None);
        assert_eq!(out.kept.len(), 1);
        assert!(out.kept[0].1.contains("not a question"), "{:?}", out.kept);
        let after: Vec<_> = items.iter().map(|i| (i.options.clone(), i.gold)).collect();
        assert_eq!(before, after);
        let asked = model.prompts();
        assert!(
            asked[2]
                .text()
                .contains("uses the answer word \"Portsmouth\""),
            "the retry says why: {}",
            asked[2].text()
        );
    }

    #[test]
    fn a_rewrite_that_gives_the_answer_away_or_asks_nothing_is_refused() {
        let evidence = ["Maiwand".to_owned()];
        assert!(check("Where was the surgeon hurt?", "Maiwand", &evidence).is_ok());
        let away =
            check("Was he hurt at maiwand?", "Maiwand", &evidence).expect_err("gives it away");
        assert!(away.contains("Maiwand"), "{away}");
        assert!(check("He was hurt at ____.", "Maiwand", &evidence).is_err());
        assert!(check("Where was he hurt at ____?", "Maiwand", &evidence).is_err());
        assert!(check("", "Maiwand", &evidence).is_err());
        // Any word of a many-word answer counts, short words aside.
        assert!(check("Which battle hurt him?", "The battle of Maiwand", &[]).is_err());
        assert!(check("Where did it happen to him?", "The battle of Maiwand", &[]).is_ok());
    }
}
