//! A shard's changes and contents as bytes, the same for every backend: the rows one
//! save puts (`Delta`), everything a store holds (`Stored`), and vectors as stored.
//! The local store (`store.rs`) and the JetStream stream (`jetstream.rs`) both speak it.

/// An item with its vector, as stored.
pub type Row = (Vec<u8>, Vec<u8>);

/// What one save changes, serialised: rows to put, by table and key.
#[derive(Debug, Default, Clone)]
pub struct Delta {
    pub state: Option<Vec<u8>>,
    pub modules: Option<Vec<u8>>,
    pub perceived: Vec<(u64, Vec<u8>)>,
    pub episodic: Vec<(u64, Row)>,
    pub semantic: Vec<(u64, Row)>,
    pub patterns: Vec<(u64, Row)>,
    pub transitions: Vec<(u64, Vec<u8>)>,
    pub audit: Vec<(u64, Vec<u8>)>,
}

impl Delta {
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.state.is_none()
            && self.modules.is_none()
            && self.perceived.is_empty()
            && self.episodic.is_empty()
            && self.semantic.is_empty()
            && self.patterns.is_empty()
            && self.transitions.is_empty()
            && self.audit.is_empty()
    }
}

/// Everything a store holds but its audit, in key order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Stored {
    pub state: Option<Vec<u8>>,
    pub modules: Option<Vec<u8>>,
    pub perceived: Vec<Vec<u8>>,
    pub episodic: Vec<Row>,
    pub semantic: Vec<Row>,
    pub patterns: Vec<Row>,
    pub transitions: Vec<Vec<u8>>,
    /// The number the next audited prompt gets.
    pub audit_next: u64,
}

/// A vector as stored: little-endian f32s.
#[must_use]
pub fn vector_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A stored vector read back (a trailing partial value is ignored).
#[must_use]
pub fn vector_of(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}
