//! The llama.cpp engine. It owns the model on a dedicated OS thread (inference is
//! blocking CPU work and must never run on the async runtime) and serves one generation
//! at a time from a queue.

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::mpsc as std_mpsc;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::params::LlamaModelParams;
use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use tokio::sync::mpsc;

use dramatis_llm::{ChatMessage, ChatRole, LlmError};

/// How to load and run the model.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub model_path: PathBuf,
    /// Context window in tokens.
    pub context: u32,
    /// CPU threads for decoding.
    pub threads: i32,
}

/// One generation request.
#[derive(Debug)]
pub struct GenerationJob {
    pub messages: Vec<ChatMessage>,
    pub max_tokens: u32,
    pub temperature: f32,
    /// A GBNF grammar the output must follow.
    pub grammar: Option<String>,
    /// Penalise generated runs that repeat the prompt (llama.cpp's DRY sampler).
    pub dry: Option<Dry>,
    pub seed: u32,
    pub events: mpsc::UnboundedSender<GenerationEvent>,
}

/// llama.cpp's DRY ("don't repeat yourself") sampler settings: a token that would
/// extend a run longer than `allowed_length` tokens already found in the context (the
/// prompt included) loses `multiplier × base^(run − allowed_length)` of its logit.
/// `penalty_last_n` −1 looks back over the whole context.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dry {
    pub multiplier: f32,
    pub base: f32,
    pub allowed_length: i32,
    pub penalty_last_n: i32,
}

/// Where DRY's runs break: a repeat across a line, a quote or a colon is two repeats.
/// These are llama.cpp's defaults; inside a JSON answer the quotes and colons also keep
/// the keys from counting as a repeat of the schema the prompt shows.
const DRY_BREAKERS: [&str; 4] = ["\n", ":", "\"", "*"];

/// What a generation reports, in order: pieces, then `Done` or `Failed`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GenerationEvent {
    Piece(String),
    Done {
        prompt_tokens: u32,
        completion_tokens: u32,
    },
    Failed(String),
}

/// A handle to the engine thread. Dropping every handle stops the thread.
#[derive(Debug, Clone)]
pub struct LocalEngine {
    jobs: std_mpsc::Sender<GenerationJob>,
}

impl LocalEngine {
    /// Loads the model on a new thread; returns once it is ready or failed to load.
    pub fn start(config: EngineConfig) -> Result<Self, LlmError> {
        if !config.model_path.is_file() {
            return Err(LlmError::Local(format!(
                "model file {} is missing: run scripts/setup.sh to fetch it",
                config.model_path.display()
            )));
        }
        let (jobs, queue) = std_mpsc::channel::<GenerationJob>();
        let (ready_tx, ready_rx) = std_mpsc::channel::<Result<(), LlmError>>();
        std::thread::Builder::new()
            .name("llama-engine".into())
            .spawn(move || engine_thread(&config, &queue, &ready_tx))
            .map_err(|e| LlmError::Local(format!("cannot start engine thread: {e}")))?;
        ready_rx
            .recv()
            .map_err(|_| LlmError::Local("engine thread died while loading".into()))??;
        Ok(Self { jobs })
    }

    /// Queues a job; its events arrive on the job's channel.
    pub fn submit(&self, job: GenerationJob) -> Result<(), LlmError> {
        self.jobs
            .send(job)
            .map_err(|_| LlmError::Local("engine thread has stopped".into()))
    }
}

fn engine_thread(
    config: &EngineConfig,
    queue: &std_mpsc::Receiver<GenerationJob>,
    ready: &std_mpsc::Sender<Result<(), LlmError>>,
) {
    let loaded = (|| {
        let mut backend = LlamaBackend::init().map_err(|e| LlmError::Local(e.to_string()))?;
        backend.void_logs();
        let model =
            LlamaModel::load_from_file(&backend, &config.model_path, &LlamaModelParams::default())
                .map_err(|e| {
                    LlmError::Local(format!("load {}: {e}", config.model_path.display()))
                })?;
        Ok::<_, LlmError>((backend, model))
    })();
    let (backend, model) = match loaded {
        Ok(loaded) => loaded,
        Err(error) => {
            // The loader may have stopped waiting; it reports its own timeout.
            let _ = ready.send(Err(error));
            return;
        }
    };
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(config.context))
        .with_n_batch(config.context)
        .with_n_threads(config.threads)
        .with_n_threads_batch(config.threads);
    let mut ctx = match model.new_context(&backend, params) {
        Ok(ctx) => ctx,
        Err(error) => {
            // The loader may have stopped waiting; it reports its own timeout.
            let _ = ready.send(Err(LlmError::Local(format!("context: {error}"))));
            return;
        }
    };
    // The loader may have stopped waiting; it reports its own timeout.
    let _ = ready.send(Ok(()));
    while let Ok(job) = queue.recv() {
        let events = job.events.clone();
        match generate(&model, &mut ctx, &job) {
            Ok((prompt_tokens, completion_tokens)) => {
                // The caller may have given the generation up; its end then goes nowhere.
                let _ = events.send(GenerationEvent::Done {
                    prompt_tokens,
                    completion_tokens,
                });
            }
            Err(message) => {
                // The caller may have given the generation up; its end then goes nowhere.
                let _ = events.send(GenerationEvent::Failed(message));
            }
        }
    }
}

fn generate(
    model: &LlamaModel,
    ctx: &mut llama_cpp_2::context::LlamaContext<'_>,
    job: &GenerationJob,
) -> Result<(u32, u32), String> {
    let template = model
        .chat_template(None)
        .map_err(|e| format!("chat template: {e}"))?;
    let chat = job
        .messages
        .iter()
        .map(|m| {
            let role = match m.role {
                ChatRole::System => "system",
                ChatRole::User => "user",
                ChatRole::Assistant => "assistant",
            };
            LlamaChatMessage::new(role.into(), m.content.clone())
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("message: {e}"))?;
    let prompt = model
        .apply_chat_template(&template, &chat, true)
        .map_err(|e| format!("apply chat template: {e}"))?;
    let vocab = model.vocab();
    let tokens = vocab.tokenize(prompt.as_bytes(), false, true);
    let n_ctx = ctx.n_ctx() as usize;
    let budget = job.max_tokens as usize;
    if tokens.len() + budget > n_ctx {
        return Err(format!(
            "prompt of {} tokens plus {budget} to generate exceeds the context of {n_ctx}",
            tokens.len()
        ));
    }
    ctx.clear_kv_cache();
    let mut batch = LlamaBatch::new(tokens.len().max(1), 1);
    let last = tokens.len() - 1;
    for (i, token) in tokens.iter().enumerate() {
        let pos = i32::try_from(i).map_err(|e| e.to_string())?;
        batch
            .add(*token, pos, &[0], i == last)
            .map_err(|e| e.to_string())?;
    }
    ctx.decode(&mut batch)
        .map_err(|e| format!("decode prompt: {e}"))?;

    let mut sampler = build_sampler(model, job)?;
    let mut dry = job.dry.map(|d| dry_sampler(model, d, n_ctx, &tokens));
    let mut pending: Vec<u8> = Vec::new();
    let mut position = i32::try_from(tokens.len()).map_err(|e| e.to_string())?;
    let mut generated = 0u32;
    let mut single = LlamaBatch::new(1, 1);
    // Logits to sample from: the prompt's last token first, then the one token decoded.
    let mut logits_index = batch.n_tokens() - 1;
    while generated < job.max_tokens {
        let token = next_token(ctx, logits_index, &mut sampler, dry.as_mut())?;
        logits_index = 0;
        if vocab.is_eog(token) {
            break;
        }
        generated += 1;
        pending.extend(vocab.token_to_piece(token, false, None));
        let text = take_valid_utf8(&mut pending);
        if !text.is_empty() && job.events.send(GenerationEvent::Piece(text)).is_err() {
            break; // the requester went away
        }
        single.clear();
        single
            .add(token, position, &[0], true)
            .map_err(|e| e.to_string())?;
        position += 1;
        ctx.decode(&mut single)
            .map_err(|e| format!("decode: {e}"))?;
    }
    if !pending.is_empty() {
        // The caller may have given the generation up; its text then goes nowhere.
        let _ = job.events.send(GenerationEvent::Piece(
            String::from_utf8_lossy(&pending).into_owned(),
        ));
    }
    let prompt_tokens = dramatis_base::saturating_u32(tokens.len());
    Ok((prompt_tokens, generated))
}

/// DRY as a sampler of its own, fed the prompt `tokens`. It must see the prompt to keep
/// the answer from copying it, and a grammar must not (it would parse the prompt as the
/// answer's start), so it is applied before the chain rather than inside it.
fn dry_sampler(model: &LlamaModel, d: Dry, n_ctx: usize, tokens: &[LlamaToken]) -> LlamaSampler {
    // This llama.cpp reads a reach of −1 as 0, which turns DRY off: "the whole
    // context" is the context's size here.
    let reach = if d.penalty_last_n < 0 {
        i32::try_from(n_ctx).unwrap_or(i32::MAX)
    } else {
        d.penalty_last_n
    };
    let mut dry = LlamaSampler::dry(
        model,
        d.multiplier,
        d.base,
        d.allowed_length,
        reach,
        DRY_BREAKERS,
    );
    dry.accept_many(tokens);
    dry
}

/// The next token from the logits at `index`: the chain's choice, after DRY's penalties
/// when there is a DRY sampler.
fn next_token(
    ctx: &llama_cpp_2::context::LlamaContext<'_>,
    index: i32,
    sampler: &mut LlamaSampler,
    dry: Option<&mut LlamaSampler>,
) -> Result<LlamaToken, String> {
    let Some(dry) = dry else {
        return Ok(sampler.sample(ctx, index));
    };
    let mut candidates = ctx.token_data_array_ith(index);
    dry.apply(&mut candidates);
    sampler.apply(&mut candidates);
    let token = candidates
        .selected_token()
        .ok_or("the sampler chose no token")?;
    sampler.accept(token);
    dry.accept(token);
    Ok(token)
}

fn build_sampler(model: &LlamaModel, job: &GenerationJob) -> Result<LlamaSampler, String> {
    let mut chain = Vec::new();
    if let Some(grammar) = &job.grammar {
        chain.push(
            LlamaSampler::grammar(model, grammar, "root")
                .map_err(|e| format!("grammar rejected: {e}"))?,
        );
    }
    // Small models loop on phrases; a mild penalty on recent tokens keeps lines moving.
    chain.push(LlamaSampler::penalties(model.n_vocab(), 64, 1.15, 0.0, 0.0));
    if job.temperature <= 0.0 {
        chain.push(LlamaSampler::greedy());
    } else {
        chain.push(LlamaSampler::top_k(40));
        chain.push(LlamaSampler::top_p(0.95, 1));
        chain.push(LlamaSampler::temp(job.temperature));
        chain.push(LlamaSampler::dist(job.seed));
    }
    Ok(LlamaSampler::chain_simple(chain))
}

/// Removes and returns the longest valid UTF-8 prefix; an incomplete trailing
/// character stays for the next piece.
fn take_valid_utf8(buffer: &mut Vec<u8>) -> String {
    let valid = match std::str::from_utf8(buffer) {
        Ok(_) => buffer.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => {
            // Invalid bytes (not merely incomplete): replace them rather than stall.
            let text = String::from_utf8_lossy(buffer).into_owned();
            buffer.clear();
            return text;
        }
    };
    let rest = buffer.split_off(valid);

    String::from_utf8(std::mem::replace(buffer, rest)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::take_valid_utf8;

    #[test]
    fn utf8_pieces_wait_for_complete_characters() {
        let snowman = "☃".as_bytes();
        let mut buffer = vec![b'a', snowman[0], snowman[1]];
        assert_eq!(take_valid_utf8(&mut buffer), "a");
        buffer.push(snowman[2]);
        assert_eq!(take_valid_utf8(&mut buffer), "☃");
        assert!(buffer.is_empty());
    }
}
