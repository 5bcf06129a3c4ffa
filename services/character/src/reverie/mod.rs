//! ReverieMem's algorithms over a character's shard: the read path (`recall`: anchor,
//! Self-Probe, visibility-bounded retrieval, Emo-Gate), the write path (`writer`: a
//! scene's memory, facts and the model rewrite) and the emotion record (`emotion`).
//! The data they work on lives in the shard and in `dramatis-memory`.

pub mod emotion;
mod options;
mod probe;
pub mod recall;
mod search;
mod settings;
pub mod writer;
