//! ReverieMem's write path over a character's shard (`writer`: a scene's memory, facts
//! and the model rewrite). The read path is `dramatis_memory::reverie`.

pub mod writer;
