//! The small helpers every crate of Dramatis needs the same way (and the unit scaling
//! of a vector, which the embedder and the memory share), in a crate of no
//! dependencies, so the pure crates (`dramatis-story`, `dramatis-scenario`) use them
//! without linking the services' runtime (its HTTP server, certificates and metrics).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

/// `n` as a `u32`, or `u32::MAX` when it does not fit (counts shown on the wire).
#[must_use]
pub fn saturating_u32<T: TryInto<u32>>(n: T) -> u32 {
    n.try_into().unwrap_or(u32::MAX)
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
#[must_use]
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Locks `mutex`, going on with the data a panicking holder left: every mutex this is
/// used for guards plain data that stays consistent between statements.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// At most `max_chars` characters of `input`, with `…` when cut: what an error may show
/// of a caller's input.
#[must_use]
pub fn prefix(input: &str, max_chars: usize) -> String {
    match input.char_indices().nth(max_chars) {
        Some((end, _)) => format!("{}…", &input[..end]),
        None => input.to_owned(),
    }
}

/// The most characters of a client's input an error message repeats.
pub const QUOTE_CHARS: usize = 40;

/// At most [`QUOTE_CHARS`] characters of `input`, quoted, saying how long it was when
/// cut: how an error message repeats what a client sent.
#[must_use]
pub fn quote(input: &str) -> String {
    let shown = prefix(input, QUOTE_CHARS);
    match shown.strip_suffix('…') {
        Some(cut) if shown.len() != input.len() => {
            format!("{cut:?}… ({} characters)", input.chars().count())
        }
        _ => format!("{shown:?}"),
    }
}

/// Appends formatted text to a `String`, as `write!` does, with no `Result` to drop:
/// `push!(text, "\n- {}", fact.text)`.
#[macro_export]
macro_rules! push {
    ($text:expr, $($arg:tt)*) => {{
        use ::std::fmt::Write as _;
        // A String's `fmt::Write` never fails: only a `Display` that errs could, and
        // then the text keeps what was written before it.
        let _ = $text.write_fmt(::std::format_args!($($arg)*));
    }};
}

/// Scales a vector to unit length in place (a zero vector stays zero).
pub fn normalise(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > f32::EPSILON {
        for x in vector.iter_mut() {
            *x /= norm;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_saturate_and_a_poisoned_lock_still_opens() {
        assert_eq!(saturating_u32(7_usize), 7);
        assert_eq!(saturating_u32(u64::MAX), u32::MAX);
        assert_eq!(saturating_u32(-1_i64), u32::MAX);
        let shared = std::sync::Arc::new(Mutex::new(1));
        let held = std::sync::Arc::clone(&shared);
        let _ = std::thread::spawn(move || {
            let _guard = held.lock().expect("first lock");
            panic!("poison it");
        })
        .join();
        assert!(shared.is_poisoned());
        *lock(&shared) += 1;
        assert_eq!(*lock(&shared), 2);
        assert!(now_ms() > 1_700_000_000_000);
        assert_eq!(prefix("abcdef", 3), "abc…");
        assert_eq!(prefix("abc", 3), "abc");
        assert_eq!(prefix("ééé", 2), "éé…");
    }

    #[test]
    fn quotes_are_cut_at_forty_characters_and_say_how_long_the_input_was() {
        let long = "x".repeat(5_000);
        let quoted = quote(&long);
        assert_eq!(quoted, format!("{:?}… (5000 characters)", "x".repeat(40)));
        assert_eq!(quote("short"), "\"short\"");
    }
}
