//! The built-in model: llama.cpp (through `llama-cpp-2`) running a small instruct GGUF on
//! the CPU, served over an OpenAI-compatible HTTP endpoint on loopback so agents reach it
//! with the same client as any real endpoint. Only the CLI links this crate, so nothing
//! else compiles llama.cpp.

mod engine;
mod server;

pub use engine::{Dry, EngineConfig, GenerationEvent, GenerationJob, LocalEngine};
pub use server::{LocalServerConfig, grammar_for_schema, serve};
