//! Streams the spoken part of a JSON action while the model is still writing it: feeds on
//! raw output pieces and yields only the characters of the `"text"` string value, so
//! watchers see words appear rather than JSON. It stops at the line's length limit, so
//! nothing streams that the kept line could not hold.

use crate::action::MAX_TEXT;

/// Incremental extractor of the `"text"` field's string value.
#[derive(Debug, Default)]
pub(crate) struct TextFieldStreamer {
    /// The tail of what came before the value (enough to recognise `"text":"`).
    seen: String,
    state: State,
    /// Characters of the value yielded so far.
    yielded: usize,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Looking for the `"text"` key.
    #[default]
    Seeking,
    /// Inside the value string; `escape` when the last char was a backslash.
    Inside {
        escape: bool,
    },
    Done,
}

impl TextFieldStreamer {
    /// Feeds a piece of model output; returns the new visible text, if any.
    pub(crate) fn push(&mut self, piece: &str) -> String {
        let mut out = String::new();
        for c in piece.chars() {
            match self.state {
                State::Done => break,
                State::Seeking => {
                    self.seen.push(c);
                    if c == '"' && value_opened(&self.seen) {
                        self.state = State::Inside { escape: false };
                    }
                    if self.seen.len() > 64 {
                        let cut = self.seen.len() - 32;
                        let cut = (cut..self.seen.len())
                            .find(|i| self.seen.is_char_boundary(*i))
                            .unwrap_or(0);
                        self.seen.drain(..cut);
                    }
                }
                State::Inside { escape: true } => {
                    out.push(match c {
                        'n' | 't' | 'r' => ' ',
                        other => other,
                    });
                    self.state = State::Inside { escape: false };
                }
                State::Inside { escape: false } => match c {
                    '\\' => self.state = State::Inside { escape: true },
                    '"' => self.state = State::Done,
                    other => out.push(other),
                },
            }
            if matches!(self.state, State::Inside { .. })
                && self.yielded + out.chars().count() >= MAX_TEXT
            {
                self.state = State::Done;
            }
        }
        self.yielded += out.chars().count();
        out
    }
}

/// Whether `seen` ends with `"text"` `:` `"` (whitespace allowed around the colon).
fn value_opened(seen: &str) -> bool {
    let before_quote = seen[..seen.len() - 1].trim_end();
    let Some(before_colon) = before_quote.strip_suffix(':') else {
        return false;
    };
    before_colon.trim_end().ends_with("\"text\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yields_only_the_text_value_across_any_split() {
        let output = r#"{"kind": "speech", "text" : "Hello, \"friend\"!", "thought": "no"}"#;
        for size in 1..8 {
            let mut streamer = TextFieldStreamer::default();
            let chars: Vec<char> = output.chars().collect();
            let visible: String = chars
                .chunks(size)
                .map(|c| streamer.push(&c.iter().collect::<String>()))
                .collect();
            assert_eq!(visible, "Hello, \"friend\"!", "chunk size {size}");
        }
    }

    #[test]
    fn a_line_past_the_limit_stops_streaming_there() {
        let mut streamer = TextFieldStreamer::default();
        let mut visible = streamer.push(&format!("{{\"kind\": \"speech\", {}", " ".repeat(5000)));
        visible.push_str(&streamer.push("\"text\": \""));
        for _ in 0..1000 {
            visible.push_str(&streamer.push("word "));
        }
        assert_eq!(visible.chars().count(), MAX_TEXT);
        assert!(
            streamer.seen.len() <= 64,
            "the text before the value is not all kept"
        );
    }

    #[test]
    fn other_fields_named_like_text_do_not_trigger() {
        let mut streamer = TextFieldStreamer::default();
        assert_eq!(streamer.push(r#"{"context": "x", "text": "yes"}"#), "yes");
    }
}
