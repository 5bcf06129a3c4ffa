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

/// The first `{...}` with balanced braces, respecting JSON strings.
fn balanced_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, c) in text[start..].char_indices() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..=start + i]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Closes an object cut off mid-way (the model ran out of tokens): ends an open string,
/// drops a dangling key, and adds the missing braces.
fn close_truncated(text: &str) -> Option<String> {
    let start = text.find('{')?;
    let mut body = text[start..].to_owned();
    let mut in_string = false;
    let mut escaped = false;
    let mut depth = 0i32;
    for c in body.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => in_string = false,
                _ => {}
            }
        } else {
            match c {
                '"' => in_string = true,
                '{' => depth += 1,
                '}' => depth -= 1,
                _ => {}
            }
        }
    }
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
