//! Synthetic embeddings for the retrieval benchmark and its comparisons with other
//! indexes: deterministic unit vectors clustered around 256 topics, so every run and
//! every index sees the same data.

/// Deterministic pseudo-random numbers in [-1, 1) (xorshift).
fn noise(seed: u64) -> impl FnMut() -> f32 {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        #[allow(clippy::cast_precision_loss)]
        let unit = (state % 2000) as f32 / 1000.0 - 1.0;
        unit
    }
}

/// A unit vector of `dimension` near topic `seed % 256`.
#[must_use]
pub fn vector(seed: u64, dimension: usize) -> Vec<f32> {
    let mut centre = noise(1 + seed % 256);
    let mut jitter = noise(1_000_003 + seed);
    let mut v: Vec<f32> = (0..dimension).map(|_| centre() + 0.5 * jitter()).collect();
    let norm = crate::vector::dot(&v, &v).sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    v
}

/// The positions of the `k` of `vectors` nearest `query` among those `admit` accepts,
/// by an exact scan, best first (ties by position): what recall is measured against.
#[must_use]
pub fn exact_top(
    vectors: &[Vec<f32>],
    query: &[f32],
    k: usize,
    admit: impl Fn(usize) -> bool,
) -> Vec<usize> {
    let mut scored: Vec<(f32, usize)> = vectors
        .iter()
        .enumerate()
        .filter(|(i, _)| admit(*i))
        .map(|(i, v)| (crate::vector::dot(v, query), i))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().take(k).map(|(_, i)| i).collect()
}

/// The share of `wanted` (per query) that `found` holds.
#[must_use]
pub fn recall(found: &[Vec<usize>], wanted: &[Vec<usize>]) -> f64 {
    let hit: usize = found
        .iter()
        .zip(wanted)
        .map(|(got, want)| want.iter().filter(|w| got.contains(w)).count())
        .sum();
    #[allow(clippy::cast_precision_loss)]
    let share = hit as f64 / wanted.iter().map(Vec::len).sum::<usize>().max(1) as f64;
    share
}
