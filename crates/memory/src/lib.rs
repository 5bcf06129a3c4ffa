//! `dramatis-memory` is one character's memory shard, after ReverieMem (§3.2): an
//! episodic layer of first-person scene memories, a semantic layer of SPOCV facts each
//! tagged with the characters who can see it, and a personality layer of situational
//! patterns with canonical excerpts and an emotion-transition record — plus the vector
//! index they search and the shard's file on disk.
//!
//! It does no I/O to the network and knows nothing of gRPC or other shards: a shard is
//! built for one character and only ever holds what reached that character. Vectors are
//! computed by the caller (the agent's embedder) and stored with the items.

pub mod echo;
mod episodic;
pub mod evidence;
mod hnsw;
mod index;
mod layers;
pub mod lexical;
pub mod modules;
mod personality;
pub mod reverie;
mod semantic;
mod sight;
pub mod synthetic;
pub mod thesaurus;
pub mod vector;

pub use episodic::{EpisodicLayer, EpisodicMemory};
pub use index::{ANN_LINK_FROM, ANN_THRESHOLD, Hit, Indexed, VectorIndex};
pub use layers::{ReverieLayers, ShardError, load_json};
pub use personality::{EmotionTransition, PersonalityLayer, PersonalityPattern};
pub use semantic::{Fact, SemanticLayer, VisibilityRoute};
