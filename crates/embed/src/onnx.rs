//! The ONNX Runtime embedder: `tokenizers` for word pieces, `ort` for the transformer,
//! mean pooling over the attention mask, L2 normalisation. Inference is blocking CPU
//! work, so it runs on tokio's blocking pool, one batch at a time per embedder.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use async_trait::async_trait;
use ndarray::Array2;
use ort::session::Session;
use ort::value::Tensor;
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use crate::{EmbedError, Embedder, normalise};

/// Where the model and the ONNX Runtime library are.
#[derive(Debug, Clone)]
pub struct OnnxEmbedderConfig {
    /// Directory holding `model.onnx` and `tokenizer.json`.
    pub model_dir: PathBuf,
    /// The ONNX Runtime shared library (`libonnxruntime.so.*`).
    pub runtime_library: PathBuf,
    /// Intra-op threads.
    pub threads: usize,
    /// Longest input in word pieces; longer texts are truncated.
    pub max_tokens: usize,
}

impl OnnxEmbedderConfig {
    /// A model directory and runtime library with the usual settings: two threads,
    /// inputs cut at 128 word pieces.
    #[must_use]
    pub fn new(model_dir: impl Into<PathBuf>, runtime_library: impl Into<PathBuf>) -> Self {
        Self {
            model_dir: model_dir.into(),
            runtime_library: runtime_library.into(),
            threads: 2,
            max_tokens: 128,
        }
    }
}

/// Texts per model run.
const GROUP: usize = 32;

/// The ONNX embedder. Clones share the session.
#[derive(Debug, Clone)]
pub struct OnnxEmbedder {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    session: Mutex<Session>,
    tokenizer: Tokenizer,
    dimension: usize,
    token_type_ids: bool,
}

/// The process-wide ONNX Runtime environment (the library can be loaded once).
static ENVIRONMENT: OnceLock<Result<ort::environment::Environment, String>> = OnceLock::new();

fn environment(library: &Path) -> Result<&'static ort::environment::Environment, EmbedError> {
    let env = ENVIRONMENT.get_or_init(|| {
        ort::init_from(library)
            .map_err(|e| e.to_string())?
            .with_name("dramatis")
            .build()
            .map_err(|e| e.to_string())
    });
    env.as_ref().map_err(|e| EmbedError::Runtime(e.clone()))
}

fn runtime(e: impl std::fmt::Display) -> EmbedError {
    EmbedError::Runtime(e.to_string())
}

impl OnnxEmbedder {
    /// Loads the tokenizer and the model; fails with a clear message if a file is missing.
    pub fn load(config: &OnnxEmbedderConfig) -> Result<Self, EmbedError> {
        let model = config.model_dir.join("model.onnx");
        let tokenizer_file = config.model_dir.join("tokenizer.json");
        for file in [&model, &tokenizer_file, &config.runtime_library] {
            if !file.is_file() {
                return Err(EmbedError::MissingFile(file.clone()));
            }
        }
        let environment = environment(&config.runtime_library)?;
        let mut tokenizer = Tokenizer::from_file(&tokenizer_file)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        // Padding happens per length group in `run`, not to the longest of the batch.
        tokenizer.with_padding(None::<PaddingParams>);
        tokenizer
            .with_truncation(Some(TruncationParams {
                max_length: config.max_tokens,
                ..TruncationParams::default()
            }))
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        let session = Session::builder(environment)
            .map_err(runtime)?
            .with_intra_threads(config.threads.max(1))
            .map_err(runtime)?
            // Idle intra-op threads sleep instead of spinning: on a small machine a
            // spinning pool takes the cores the world, the other agents and the next
            // line's I/O need between two embeddings.
            .with_intra_op_spinning(false)
            .map_err(runtime)?
            // No arena for activations: an arena keeps the largest batch's buffers for
            // the life of the process (a batch of 32 sentences of 48 pieces left an
            // idle process 113 MB larger), and an agent idles far more than it embeds.
            // Each run asks the allocator for its buffers and gives them back.
            .with_execution_providers([ort::ep::CPU::default().with_arena_allocator(false).build()])
            .map_err(runtime)?
            .commit_from_file(&model)
            .map_err(runtime)?;
        let token_type_ids = session
            .inputs()
            .iter()
            .any(|i| i.name() == "token_type_ids");
        let mut embedder = Inner {
            session: Mutex::new(session),
            tokenizer,
            dimension: 0,
            token_type_ids,
        };
        // One probe tells the output width, whatever model this is.
        embedder.dimension = embedder.run(&["dimension probe".to_owned()])?[0].len();
        Ok(Self {
            inner: Arc::new(embedder),
        })
    }
}

impl Inner {
    /// Embeds `texts`. Texts are grouped by length (up to [`GROUP`] per run, lengths
    /// within half of each other) so a long text does not make every short one in the
    /// batch pay for its padding.
    fn run(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let encodings = self
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| EmbedError::Tokenizer(e.to_string()))?;
        let mut order: Vec<usize> = (0..encodings.len()).collect();
        order.sort_by_key(|&i| encodings[i].get_ids().len());
        let length = |i: usize| encodings[i].get_ids().len();
        let mut vectors = vec![Vec::new(); encodings.len()];
        let mut start = 0;
        while start < order.len() {
            // A group ends at GROUP texts or where padding would pass half the shortest.
            let limit = length(order[start]) * 3 / 2 + 8;
            let mut end = start + 1;
            while end < order.len() && end - start < GROUP && length(order[end]) <= limit {
                end += 1;
            }
            let group = &order[start..end];
            let members: Vec<&tokenizers::Encoding> =
                group.iter().map(|&i| &encodings[i]).collect();
            for (&i, vector) in group.iter().zip(self.run_group(&members)?) {
                vectors[i] = vector;
            }
            start = end;
        }
        Ok(vectors)
    }

    /// One model run over encodings padded to the longest among them.
    fn run_group(&self, encodings: &[&tokenizers::Encoding]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let batch = encodings.len();
        let width = encodings
            .iter()
            .map(|e| e.get_ids().len())
            .max()
            .unwrap_or(0);
        let mut ids = Array2::<i64>::zeros((batch, width));
        let mut mask = Array2::<i64>::zeros((batch, width));
        let mut types = Array2::<i64>::zeros((batch, width));
        for (row, encoding) in encodings.iter().enumerate() {
            for (col, ((&id, &m), &t)) in encoding
                .get_ids()
                .iter()
                .zip(encoding.get_attention_mask())
                .zip(encoding.get_type_ids())
                .enumerate()
            {
                ids[[row, col]] = i64::from(id);
                mask[[row, col]] = i64::from(m);
                types[[row, col]] = i64::from(t);
            }
        }
        let mut inputs = ort::inputs![
            "input_ids" => Tensor::from_array(ids).map_err(runtime)?,
            "attention_mask" => Tensor::from_array(mask.clone()).map_err(runtime)?,
        ];
        if self.token_type_ids {
            inputs.push((
                "token_type_ids".into(),
                Tensor::from_array(types).map_err(runtime)?.into(),
            ));
        }
        // Timed for `bench` (`eval/src/bench/stages.rs`): the wait for the process's one
        // session, and the model run itself.
        let waiting = tracing::info_span!("embed_wait").entered();
        let mut session = self
            .session
            .lock()
            .map_err(|_| EmbedError::Worker("session lock poisoned".into()))?;
        drop(waiting);
        let _running = tracing::info_span!("embed_run").entered();
        let outputs = session.run(inputs).map_err(runtime)?;
        let hidden = outputs[0].try_extract_array::<f32>().map_err(runtime)?;
        let shape = hidden.shape().to_vec();
        if shape.len() != 3 || shape[0] != batch || shape[1] != width {
            return Err(EmbedError::Runtime(format!(
                "unexpected output shape {shape:?} for a batch of {batch}x{width}"
            )));
        }
        let dimension = shape[2];
        let mut vectors = Vec::with_capacity(batch);
        for row in 0..batch {
            let mut pooled = vec![0.0f32; dimension];
            let mut count = 0.0f32;
            for col in 0..width {
                if mask[[row, col]] == 0 {
                    continue;
                }
                count += 1.0;
                for (d, slot) in pooled.iter_mut().enumerate() {
                    *slot += hidden[[row, col, d]];
                }
            }
            if count > 0.0 {
                for slot in &mut pooled {
                    *slot /= count;
                }
            }
            normalise(&mut pooled);
            vectors.push(pooled);
        }
        Ok(vectors)
    }
}

#[async_trait]
impl Embedder for OnnxEmbedder {
    fn dimension(&self) -> usize {
        self.inner.dimension
    }

    /// Word pieces without the special tokens, as far as the model reads them.
    fn tokens(&self, text: &str) -> usize {
        self.inner
            .tokenizer
            .encode(text, false)
            .map_or(1, |e| e.get_ids().len().max(1))
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let inner = Arc::clone(&self.inner);
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || {
            let vectors = inner.run(&texts);
            if texts.len() >= TRIM_AFTER {
                give_back_freed_memory();
            }
            vectors
        })
        .await
        .map_err(|e| EmbedError::Worker(e.to_string()))?
    }
}

/// A batch of at least this many texts is followed by a trim of the allocator.
const TRIM_AFTER: usize = 32;

/// Hands the memory a large batch freed back to the system. The batch runs on a
/// blocking-pool thread, whose own malloc arena otherwise keeps the freed buffers
/// (tens of MB after a shard's first embedding) for the life of the process, or not,
/// depending on which arena the thread drew: `malloc_trim` releases the free pages of
/// every arena.
#[allow(unsafe_code)]
fn give_back_freed_memory() {
    // SAFETY: `malloc_trim` only returns free pages to the system; it reads and
    // writes no memory of ours and is safe to call from any thread at any time.
    unsafe {
        libc::malloc_trim(0);
    }
}
