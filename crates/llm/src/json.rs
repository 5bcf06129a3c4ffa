//! Reading JSON out of model output without ever evaluating it: the text as it is, the
//! first balanced object inside chatter or code fences, or a truncated object closed off.

use serde::de::DeserializeOwned;

/// Parses model output as JSON of type `T` that `usable` accepts, without ever
/// evaluating it. Tries, in order: the text as it is; the first balanced `{...}` inside
/// it (code fences, chatter around it); a truncated object closed off. The flag is true
/// when a repair was needed.
#[must_use]
pub fn parse_json<T: DeserializeOwned>(
    output: &str,
    usable: impl Fn(&T) -> bool,
) -> Option<(T, bool)> {
    let trimmed = output.trim();
    if let Some(value) = serde_json::from_str::<T>(trimmed).ok().filter(&usable) {
        return Some((value, false));
    }
    let candidate = balanced_object(trimmed)
        .map(str::to_owned)
        .or_else(|| close_truncated(trimmed))?;
    serde_json::from_str::<T>(&candidate)
        .ok()
        .filter(usable)
        .map(|value| (value, true))
}

/// Where a scan through JSON text stands: inside a string (and after a backslash), and
/// how many objects are open.
#[derive(Debug, Default)]
struct Scanner {
    depth: i32,
    in_string: bool,
    escaped: bool,
}

impl Scanner {
    /// Takes the next character; true when it closed the outermost object.
    fn feed(&mut self, c: char) -> bool {
        if self.in_string {
            match c {
                _ if self.escaped => self.escaped = false,
                '\\' => self.escaped = true,
                '"' => self.in_string = false,
                _ => {}
            }
            return false;
        }
        match c {
            '"' => self.in_string = true,
            '{' => self.depth += 1,
            '}' => {
                self.depth -= 1;
                return self.depth == 0;
            }
            _ => {}
        }
        false
    }
}

/// The first `{...}` with balanced braces, respecting JSON strings.
fn balanced_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let mut scanner = Scanner::default();
    text[start..]
        .char_indices()
        .find(|&(_, c)| scanner.feed(c))
        .map(|(i, _)| &text[start..=start + i])
}

/// Closes an object cut off mid-way (the model ran out of tokens): ends an open string,
/// drops a dangling key, and adds the missing braces.
fn close_truncated(text: &str) -> Option<String> {
    let start = text.find('{')?;
    let mut body = text[start..].to_owned();
    let mut scanner = Scanner::default();
    for c in body.chars() {
        scanner.feed(c);
    }
    let Scanner {
        depth,
        in_string,
        escaped,
    } = scanner;
    if escaped {
        body.pop();
    }
    if in_string {
        body.push('"');
    }
    let trimmed = body.trim_end().trim_end_matches(',');
    let mut body = trimmed.to_owned();
    if body.ends_with(':') {
        body.push_str("\"\"");
    }
    for _ in 0..depth.max(0) {
        body.push('}');
    }
    Some(body)
}
