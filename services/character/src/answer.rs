//! Answer: an interview question put to a character, answered from what its own
//! memory brings to mind, or refused when nothing it remembers bears on it; and the
//! recall-only view of the same question. Both run on a scratch copy of the shard, so
//! an interview changes nothing in the character but its prompt audit.

use std::time::Instant;

use dramatis_llm::{CompletionRequest, LanguageModel, ModelRole};
use dramatis_memory::reverie::{Query, Recalled, is_refusal};
use dramatis_proto::v1::{RecalledItem, Usage};

use dramatis_memory::modules::Grounding;

use crate::boundary::{Asked, Guarded};
use crate::character::Character;
use crate::error::AgentError;
use crate::evidence::{self, Verdict};
use crate::host::{AnswerOutcome, CharacterAgents};
use crate::mind::usage_of;
use crate::prompt::{self};
use crate::shard::Shard;

/// What a question brings to a character's mind, without an answer.
#[derive(Debug, Clone, Default)]
pub struct RecallView {
    /// The items an answer prompt would hold, in prompt order.
    pub items: Vec<RecalledItem>,
    /// Self-Probe and module steps.
    pub usage: Usage,
    /// The evidence gate refused.
    pub abstained: bool,
    /// With options: the one the character holds evidence for.
    pub choice: Option<usize>,
}

/// Options a multiple-choice question may carry at most, and the length of each.
pub const MAX_OPTIONS: usize = 8;
pub const MAX_OPTION_CHARS: usize = 500;

/// A multiple-choice question's options are a few short, non-empty texts.
pub fn check_options(options: &[String]) -> Result<(), AgentError> {
    if options.len() > MAX_OPTIONS {
        return Err(AgentError::InvalidArgument(format!(
            "{} options; a question takes at most {MAX_OPTIONS}",
            options.len()
        )));
    }
    for (i, option) in options.iter().enumerate() {
        if option.trim().is_empty() {
            return Err(AgentError::InvalidArgument(format!("option {i} is empty")));
        }
        if option.chars().count() > MAX_OPTION_CHARS {
            return Err(AgentError::InvalidArgument(format!(
                "option {i} is longer than {MAX_OPTION_CHARS} characters"
            )));
        }
    }
    Ok(())
}

/// The in-character refusal an unsupported answer is replaced by.
const REFUSAL: &str = "I cannot answer that from my own knowledge.";

/// An interview needs a question.
pub fn check_question(question: &str) -> Result<(), AgentError> {
    if question.trim().is_empty() {
        return Err(AgentError::InvalidArgument(
            "question must not be empty".into(),
        ));
    }
    Ok(())
}

impl CharacterAgents {
    /// What an interview question brings to mind: ReverieMem's recall (when on) and
    /// the modules' grounding, with whether the character must abstain. The usage is
    /// that of Self-Probe and module steps.
    async fn recall_for_question(
        &self,
        shard: &mut Shard,
        model: &dyn LanguageModel,
        question: &str,
        options: &[String],
    ) -> Result<(Recalled, Vec<Grounding>, Verdict), AgentError> {
        let scene_id = shard
            .perceived()
            .last()
            .map(|p| p.scene_id.clone())
            .unwrap_or_default();
        let mut recalled = self
            .recall(
                shard,
                model,
                &Query {
                    text: question,
                    lines: &[],
                    trigger: question,
                    trigger_pieces: &[],
                    scene_id: &scene_id,
                    rounds: self.options.recall.answer_rounds,
                    options,
                },
            )
            .await?;
        let grounding = self
            .module_grounding(shard, model, question, true, &[], &mut recalled.spent)
            .await?;
        let me = shard.id().to_owned();
        let lines: Vec<String> = shard
            .current_scene()
            .iter()
            .filter_map(|p| p.line(&me))
            .collect();
        let verdict = self.verdict(
            shard,
            &mut recalled,
            &grounding,
            &lines,
            (question, options),
        );
        Ok((recalled, grounding, verdict))
    }

    /// Whether the character may answer `question` from what it recalled, and with
    /// options, which one it holds evidence for ([`evidence::weigh`]). Without the
    /// gate, anything recalled at all, or a module item that reaches its floor,
    /// cancels a refusal. The recalled workspace's `abstain` is set to the verdict, and
    /// a chosen option's evidence joins the workspace the prompt shows.
    pub(crate) fn verdict(
        &self,
        shard: &Shard,
        recalled: &mut Recalled,
        grounding: &[Grounding],
        lines: &[String],
        (question, options): (&str, &[String]),
    ) -> Verdict {
        let settings = &self.options.recall;
        let own = evidence::own_description(shard, question);
        // The gate reads the question with the other names of whoever it names.
        let others = evidence::other_names(shard, question);
        let question = if others.is_empty() {
            question.to_owned()
        } else {
            format!("{question} ({})", others.join("; "))
        };
        let verdict = match &settings.gate {
            Some(gate) => evidence::weigh(
                (gate, settings.relevant),
                recalled,
                grounding,
                (own.as_deref(), lines),
                (&question, options),
                (
                    &|stem| shard.layers().semantic.word_rarity(stem),
                    if settings.synonyms {
                        evidence::thesaurus()
                    } else {
                        evidence::no_synonyms()
                    },
                ),
            ),
            None => Verdict {
                abstain: evidence::abstains(recalled.abstain, grounding),
                ..Verdict::default()
            },
        };
        recalled.abstain = verdict.abstain;
        if let Some(id) = &verdict.support
            && let Some(at) = recalled.evidence.iter().position(|f| &f.id == id)
        {
            let found = recalled.evidence.remove(at);
            if let Some(fact) = found.fact {
                recalled.facts.insert(0, (fact, found.closeness));
            } else if let Some(memory) = found.memory {
                recalled.anchor = Some(memory);
                recalled.anchor_closeness = found.closeness;
            }
        }
        verdict
    }

    /// The answer, from a scratch copy of the character's shard.
    async fn answer_on(
        &self,
        shard: &mut Shard,
        model: &dyn LanguageModel,
        question: &str,
        options: &[String],
    ) -> Result<AnswerOutcome, AgentError> {
        let started = Instant::now();
        let (recalled, grounding, verdict) = self
            .recall_for_question(shard, model, question, options)
            .await?;
        let built = prompt::answer(
            shard,
            &recalled,
            &grounding,
            question,
            self.options.prompt_budget_tokens,
        );
        built.audit(shard, "answer");
        let request = CompletionRequest::new(built.messages.clone())
            .with_max_tokens(self.options.answer_max_tokens)
            .with_temperature(self.options.answer_temperature);
        let completion = model.complete(&request, None).await?;
        let mut usage = usage_of(recalled.spent);
        usage.count_call(completion.prompt_tokens, completion.completion_tokens);
        let mut answer = completion.text.trim().to_owned();
        if recalled.abstain && !is_refusal(&answer) {
            // The model claimed something its character cannot know: keep the boundary.
            tracing::info!(character = shard.id(), said = %answer, "replaced an unsupported answer with a refusal");
            answer = REFUSAL.to_owned();
        }
        if !recalled.abstain {
            let asked = Asked {
                purpose: "answer",
                built: &built,
                request: &request,
                frame: None,
                given: &[question],
            };
            let text = |reply: &str| Some(reply.trim().to_owned()).filter(|t| !t.is_empty());
            let guard = self.options.boundary_guard;
            match crate::boundary::guard_line(
                guard, shard, model, &asked, &answer, text, &mut usage,
            )
            .await?
            {
                Guarded::Kept => {}
                Guarded::Replaced(again) => again.trim().clone_into(&mut answer),
                Guarded::GivenUp => REFUSAL.clone_into(&mut answer),
            }
        }
        usage.latency_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(AnswerOutcome {
            answer,
            usage,
            abstained: recalled.abstain,
            choice: verdict.choice,
        })
    }
}

impl Character {
    /// Answers a question from the character's own shard. When nothing the character
    /// remembers bears on it, the answer is an in-character refusal. It runs on a
    /// scratch copy of the shard and changes nothing in the character but its audit.
    pub async fn answer(
        &self,
        question: &str,
        options: &[String],
    ) -> Result<AnswerOutcome, AgentError> {
        self.answer_as_of(question, options, None).await
    }

    /// [`Character::answer`] as the character stood once it had perceived every event
    /// up to `as_of` ([`Shard::as_of`]); now when `None`.
    pub async fn answer_as_of(
        &self,
        question: &str,
        options: &[String],
        as_of: Option<u64>,
    ) -> Result<AnswerOutcome, AgentError> {
        check_question(question)?;
        let model = self.agents.options.models.get(ModelRole::Answer);
        self.interview(as_of, async |scratch: &mut Shard| {
            self.agents
                .answer_on(scratch, model.as_ref(), question, options)
                .await
        })
        .await
    }

    /// What `question` brings to the character's mind — the items an answer prompt would
    /// hold, with their module and text — without the answer call. For evaluating memory.
    /// Like an answer, it changes nothing in the character.
    pub async fn recall_view(
        &self,
        question: &str,
        options: &[String],
    ) -> Result<RecallView, AgentError> {
        self.recall_view_as_of(question, options, None).await
    }

    /// [`Character::recall_view`] as the character stood at `as_of`.
    pub async fn recall_view_as_of(
        &self,
        question: &str,
        options: &[String],
        as_of: Option<u64>,
    ) -> Result<RecallView, AgentError> {
        check_question(question)?;
        let model = self.agents.options.models.get(ModelRole::Answer);
        self.interview(as_of, async |scratch: &mut Shard| {
            let (recalled, grounding, verdict) = self
                .agents
                .recall_for_question(scratch, model.as_ref(), question, options)
                .await?;
            let built = prompt::answer(
                scratch,
                &recalled,
                &grounding,
                question,
                self.agents.options.prompt_budget_tokens,
            );
            let texts = prompt::item_texts(scratch, &recalled, &grounding);
            let items = built
                .items
                .iter()
                .map(|(id, layer)| RecalledItem {
                    id: id.clone(),
                    module: crate::shard::module_of(layer).to_owned(),
                    layer: layer.clone(),
                    text: texts.get(id).cloned().unwrap_or_default(),
                })
                .collect();
            Ok(RecallView {
                items,
                usage: usage_of(recalled.spent),
                abstained: recalled.abstain,
                choice: verdict.choice,
            })
        })
        .await
    }

    /// Runs `ask` on a scratch copy of the character's shard ([`Shard::scratch`]): an
    /// interview is read-only for ReverieMem's layers, the mood and every memory module,
    /// whatever the read path and the modules' `ground` would change, and the shard file
    /// is not rewritten. The one thing kept is the prompt audit (a record of what was
    /// sent, not memory): the prompts the interview sent, even when it failed part way,
    /// are appended to the shard's audit and its audit file. With `as_of`, the copy is
    /// the shard as it stood then ([`Shard::as_of`]), and each prompt's purpose says so
    /// ("answer as of 41, read-only").
    async fn interview<T>(
        &self,
        as_of: Option<u64>,
        ask: impl AsyncFnOnce(&mut Shard) -> Result<T, AgentError>,
    ) -> Result<T, AgentError> {
        let mut shard = self.shard.lock().await;
        let mut scratch = match as_of {
            Some(seq) => shard.as_of(seq),
            None => shard.scratch(),
        };
        let outcome = ask(&mut scratch).await;
        if let Some(seq) = as_of {
            scratch.mark_audit(&format!(" as of {seq}, read-only"));
        }
        let saved = shard.keep_audit_of(scratch)?;
        drop(shard);
        saved.wait().await?;
        outcome
    }
}
