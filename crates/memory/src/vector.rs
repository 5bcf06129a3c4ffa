//! Vector math for embeddings, in one place: the dot product (the similarity of the
//! unit vectors every embedder here produces) and the cosine of any two vectors.

/// Dot product with eight independent sums, which the compiler vectorises. For unit
/// vectors it is their cosine similarity.
#[must_use]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut sums = [0.0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..8 {
            sums[lane] += x[lane] * y[lane];
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// Cosine similarity of two vectors of any length (0 for empty, mismatched or zero
/// ones). The agent's embeddings are unit vectors, but module tests and fallbacks need
/// not be.
#[must_use]
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    if a.len() != b.len() || a.is_empty() {
        return 0.0;
    }
    let (na, nb) = (dot(a, a), dot(b, b));
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot(a, b) / (na.sqrt() * nb.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_the_plain_sum_past_the_eight_lanes_and_cosine_ignores_length() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..19).map(|i| 3.0 - i as f32).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-3);
        let doubled: Vec<f32> = a.iter().map(|x| x * 2.0).collect();
        assert!((cosine(&a, &doubled) - 1.0).abs() < 1e-6);
        assert_eq!(cosine(&a, &b[..3]), 0.0);
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 0.0]), 0.0);
    }
}
