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

/// Whether `c` is of a script a small model's byte-level vocabulary, trained mostly on
/// English, spends about two tokens on per character (measured on the built-in model:
/// 600 characters of 红楼梦 took 1,063 tokens): Han ideographs, kana, hangul and the
/// CJK punctuation and fullwidth forms.
fn wide(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x11FF | 0x2E80..=0x9FFF | 0xA960..=0xA97F | 0xAC00..=0xD7FF
        | 0xF900..=0xFAFF | 0xFE30..=0xFE4F | 0xFF00..=0xFFEF | 0x20000..=0x3FFFF)
}

/// A rough token count: about four characters a token, two tokens a character of a
/// wide script ([`wide`]); never zero for text. Text with no wide character counts as
/// it always has (four characters a token), so English figures do not move.
#[must_use]
pub fn estimate_tokens(text: &str) -> usize {
    let (wide, narrow) = text.chars().fold((0_usize, 0_usize), |(w, n), c| {
        if wide(c) { (w + 1, n) } else { (w, n + 1) }
    });
    2 * wide + narrow.div_ceil(4)
}

/// `text` cut to about `tokens` tokens by [`estimate_tokens`], with ` …` when cut: at the
/// last space before the limit, or at a character when the text has no spaces there
/// (Chinese has none between words).
#[must_use]
pub fn clip_tokens(text: &str, tokens: usize) -> std::borrow::Cow<'_, str> {
    if estimate_tokens(text) <= tokens {
        return std::borrow::Cow::Borrowed(text);
    }
    // Quarter tokens, so four narrow characters make one.
    let limit = tokens.saturating_sub(1) * 4;
    let (mut spent, mut end, mut space) = (0, 0, None);
    for (at, c) in text.char_indices() {
        spent += if wide(c) { 8 } else { 1 };
        if spent > limit {
            break;
        }
        if c.is_whitespace() {
            space = Some(at);
        }
        end = at + c.len_utf8();
    }
    // A space in the last fifth of the kept text is a cleaner cut than mid-word.
    let cut = match space {
        Some(at) if at * 5 >= end * 4 => at,
        _ => end,
    };
    std::borrow::Cow::Owned(format!("{} …", text[..cut].trim_end()))
}

/// A file or folder of `shared/` beside the repository (the books and other tools' files
/// the tests read and never copy), found from a crate's `CARGO_MANIFEST_DIR` at any depth
/// of the workspace: `None`, said on stderr, where it is absent.
#[must_use]
pub fn shared(manifest_dir: &str, path: &str) -> Option<std::path::PathBuf> {
    let crate_dir = std::path::Path::new(manifest_dir);
    let root = crate_dir
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .unwrap_or(crate_dir);
    let found = root.join("../shared").join(path);
    if found.exists() {
        Some(found)
    } else {
        eprintln!("SKIPPED: {} is absent", found.display());
        None
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

/// A Han ideograph (not punctuation): a character of a Chinese word.
#[must_use]
pub fn is_han(c: char) -> bool {
    matches!(c as u32, 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

/// Whether `text[at..end]` stands as whole words: no letter or digit runs on before or
/// after it. An edge whose character is Han needs no boundary on that side, since Chinese
/// puts no space between words (黛玉 in 忽见黛玉笑道 is the name).
#[must_use]
pub fn whole_word_at(text: &str, at: usize, end: usize) -> bool {
    let Some(word) = text.get(at..end) else {
        return false;
    };
    let open = |neighbour: Option<char>, edge: Option<char>| {
        edge.is_some_and(is_han) || !neighbour.is_some_and(char::is_alphanumeric)
    };
    open(text[..at].chars().next_back(), word.chars().next())
        && open(text[end..].chars().next(), word.chars().next_back())
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

    #[test]
    fn a_word_stands_whole_between_marks_and_a_chinese_one_inside_a_sentence() {
        let text = "Holmes met Holmesby. 忽见黛玉笑道：";
        assert!(whole_word_at(text, 0, 6));
        let by = text.find("Holmesby").expect("in the text");
        assert!(!whole_word_at(text, by, by + 6));
        let name = text.find("黛玉").expect("in the text");
        assert!(whole_word_at(text, name, name + "黛玉".len()));
        assert!(!whole_word_at("Xin黛", 0, 2));
        assert!(is_han('黛') && !is_han('。') && !is_han('a'));
        // A slice that is not on a character boundary is no word.
        assert!(!whole_word_at(text, name + 1, name + 3));
    }

    #[test]
    fn tokens_are_four_characters_or_two_a_wide_character_and_clips_fit() {
        assert_eq!(estimate_tokens(""), 0);
        assert_eq!(estimate_tokens("abcdefgh"), 2);
        assert_eq!(estimate_tokens("abcdefghi"), 3);
        // An em dash or an accent is narrow: English counts as it did.
        assert_eq!(estimate_tokens("café — ok"), 3);
        assert_eq!(estimate_tokens("林黛玉"), 6);
        // Curly quotes are English punctuation too: narrow.
        assert_eq!(estimate_tokens("黛玉笑道“好”"), 11);
        assert_eq!(estimate_tokens("「好」。"), 8);
        assert_eq!(clip_tokens("short enough", 10), "short enough");
        let long = "word ".repeat(100);
        let clipped = clip_tokens(&long, 20);
        assert!(clipped.ends_with("word …"), "{clipped}");
        assert!(estimate_tokens(&clipped) <= 20, "{clipped}");
        let chinese = "宝玉".repeat(50);
        let clipped = clip_tokens(&chinese, 21);
        assert_eq!(clipped, format!("{} …", "宝玉".repeat(5)));
        assert!(estimate_tokens(&clipped) <= 21);
    }
}
