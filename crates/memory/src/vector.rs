//! Vector math for embeddings, in one place: the dot product (the similarity of the
//! unit vectors every embedder here produces) and the cosine of any two vectors.

use pulp::Arch;

/// Dot product. For unit vectors it is their cosine similarity. It runs on the widest
/// vector instructions the processor offers (AVX2 with FMA, or AVX-512), chosen at run
/// time: the build targets plain x86-64, and a scan that calls this once per vector
/// should go through [`Kernel`] instead, so the choice is made once per scan.
#[must_use]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    run(Dot(a, b))
}

struct Dot<'a>(&'a [f32], &'a [f32]);

impl Kernel for Dot<'_> {
    type Output = f32;

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> f32 {
        dot_in(simd, self.0, self.1)
    }
}

/// [`dot`] inside a [`Kernel`]: inlined into its caller, which was compiled for `simd`.
/// Four independent sums of whole registers, so the additions do not wait on each other;
/// vectors of unequal length are read to the shorter one.
#[inline(always)]
pub fn dot_in<S: Simd>(simd: S, a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a_head, a_tail) = S::as_simd_f32s(&a[..n]);
    let (b_head, b_tail) = S::as_simd_f32s(&b[..n]);
    let zero = simd.splat_f32s(0.0);
    let mut sums = [zero; 4];
    let (a_quads, b_quads) = (a_head.chunks_exact(4), b_head.chunks_exact(4));
    let (a_rest, b_rest) = (a_quads.remainder(), b_quads.remainder());
    for (x, y) in a_quads.zip(b_quads) {
        for lane in 0..4 {
            sums[lane] = simd.mul_add_e_f32s(x[lane], y[lane], sums[lane]);
        }
    }
    for (x, y) in a_rest.iter().zip(b_rest) {
        sums[0] = simd.mul_add_e_f32s(*x, *y, sums[0]);
    }
    let total = simd.add_f32s(
        simd.add_f32s(sums[0], sums[1]),
        simd.add_f32s(sums[2], sums[3]),
    );
    let tail: f32 = a_tail.iter().zip(b_tail).map(|(x, y)| x * y).sum();
    simd.reduce_sum_f32s(total) + tail
}

/// Work over many vectors compiled once for each instruction set and run on the best
/// one present: implement it, and call [`dot_in`] with the `simd` it is given.
pub use pulp::{Simd, WithSimd as Kernel};

/// Runs `kernel` on the widest instruction set present.
pub fn run<K: Kernel>(kernel: K) -> K::Output {
    Arch::new().dispatch(kernel)
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

    /// Two vectors of `n` small values with exact products.
    fn pair(n: usize) -> (Vec<f32>, Vec<f32>) {
        let a = (0..n).map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0).collect();
        let b = (0..n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 4.0).collect();
        (a, b)
    }

    /// The dot product summed one term at a time in double precision.
    fn plain_dot(a: &[f32], b: &[f32]) -> f64 {
        a.iter()
            .zip(b)
            .map(|(x, y)| f64::from(*x) * f64::from(*y))
            .sum()
    }

    /// Each instruction set the processor has, the scalar fallback included, gives the
    /// plain sum: a machine with AVX2 only, or none, runs a path this one's dispatch
    /// would not choose.
    #[test]
    fn every_instruction_set_present_gives_the_plain_sum() {
        let (a, b) = pair(389);
        let plain = plain_dot(&a, &b);
        let mut sums = vec![("scalar", Simd::vectorize(pulp::Scalar::new(), Dot(&a, &b)))];
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(avx2) = pulp::x86::V3::try_new() {
                sums.push(("avx2", Simd::vectorize(avx2, Dot(&a, &b))));
            }
            if let Some(avx512) = pulp::x86::V4::try_new() {
                sums.push(("avx512", Simd::vectorize(avx512, Dot(&a, &b))));
            }
        }
        for (set, sum) in sums {
            assert!(
                (f64::from(sum) - plain).abs() < 1e-3,
                "{set}: {sum} against {plain}"
            );
        }
    }

    /// The widest registers hold 16 numbers, and four are summed at once: lengths
    /// around and between those multiples, and the embedder's 384, all come out as the
    /// plain sum, and unequal lengths are read to the shorter.
    #[test]
    fn dot_is_the_plain_sum_at_every_length_on_the_instructions_present() {
        for n in (0..=130).chain([383, 384, 385]) {
            let (a, b) = pair(n);
            let plain = plain_dot(&a, &b);
            let got = f64::from(dot(&a, &b));
            assert!(
                (got - plain).abs() < 1e-3,
                "length {n}: {got} against {plain}"
            );
            if n > 3 {
                let short = f64::from(dot(&a, &b[..n - 3]));
                let plain_short = plain_dot(&a, &b[..n - 3]);
                assert!(
                    (short - plain_short).abs() < 1e-3,
                    "length {n} against {}",
                    n - 3
                );
            }
        }
    }

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
