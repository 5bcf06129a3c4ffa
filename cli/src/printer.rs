//! Prints a transcript stream for people: a header per scene, speaker names in colour,
//! words as they are generated, then the settled line.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};

use anstyle::{AnsiColor, Style};
use dramatis_proto::v1::{Event, EventKind, TokenChunk, WatchResponse, watch_response};

const PALETTE: [AnsiColor; 6] = [
    AnsiColor::Cyan,
    AnsiColor::Yellow,
    AnsiColor::Magenta,
    AnsiColor::Green,
    AnsiColor::Blue,
    AnsiColor::Red,
];

/// Renders transcript items to stdout.
#[derive(Debug)]
pub struct Printer {
    color: bool,
    /// stdout is a terminal, where a streamed line can be rewritten in place.
    tty: bool,
    colors: HashMap<String, AnsiColor>,
    /// The seq whose tokens are on the current line, and what was printed of it.
    streaming: Option<(u64, String)>,
    /// Highest event seq printed.
    pub last_seq: u64,
}

impl Printer {
    pub fn new(no_color: bool) -> Self {
        let tty = std::io::stdout().is_terminal();
        Self {
            color: !no_color && tty,
            tty,
            colors: HashMap::new(),
            streaming: None,
            last_seq: 0,
        }
    }

    fn paint(&self, style: Style, text: &str) -> String {
        if self.color {
            format!("{style}{text}{style:#}")
        } else {
            text.to_owned()
        }
    }

    fn name(&mut self, id: &str, name: &str) -> String {
        let next = PALETTE[self.colors.len() % PALETTE.len()];
        let color = *self.colors.entry(id.to_owned()).or_insert(next);
        let shown = if name.is_empty() { id } else { name };
        self.paint(Style::new().bold().fg_color(Some(color.into())), shown)
    }

    pub fn item(&mut self, item: WatchResponse) {
        match item.item {
            Some(watch_response::Item::Event(event)) => self.event(&event),
            Some(watch_response::Item::Token(token)) => self.token(&token),
            None => {}
        }
        // A closed stdout (its reader left) has nothing more to show.
        let _ = std::io::stdout().flush();
    }

    fn token(&mut self, token: &TokenChunk) {
        // Off a terminal (a pipe, a file) a streamed line cannot be rewritten when it
        // settles otherwise: only settled lines are printed, each once.
        if !self.tty {
            return;
        }
        let mut out = std::io::stdout().lock();
        match &mut self.streaming {
            Some((seq, text)) if *seq == token.seq => {
                text.push_str(&token.text);
                // A closed stdout (its reader left) has nothing more to show.
                let _ = write!(out, "{}", token.text);
            }
            _ => {
                drop(out);
                let name = self.name(&token.speaker, &token.speaker_name);
                let mut out = std::io::stdout().lock();
                // A closed stdout (its reader left) has nothing more to show.
                let _ = write!(out, "{name}: {}", token.text);
                self.streaming = Some((token.seq, token.text.clone()));
            }
        }
    }

    fn event(&mut self, event: &Event) {
        self.last_seq = self.last_seq.max(event.seq);
        let streamed = self.streaming.take();
        let dim = Style::new().dimmed();
        let line = match event.kind() {
            EventKind::SceneStart => {
                let bar = "═".repeat(6);
                format!(
                    "\n{}",
                    self.paint(Style::new().bold(), &format!("{bar} {} {bar}", event.text))
                )
            }
            EventKind::SceneEnd => self.paint(dim, &format!("— {} —", event.text)),
            EventKind::Narration if event.director => {
                let to = if event.perceiver_names.is_empty() {
                    event.perceivers.join(", ")
                } else {
                    event.perceiver_names.join(", ")
                };
                format!(
                    "{} {}",
                    self.paint(dim, &format!("[director → {to}]")),
                    self.paint(Style::new().italic(), &event.text)
                )
            }
            EventKind::Narration => self.paint(Style::new().italic(), &event.text),
            EventKind::Movement if event.travel_rounds > 0 => self.paint(
                dim,
                &format!(
                    "→ {} sets off for {} ({} round{}): {}",
                    event.speaker_name,
                    event.destination,
                    event.travel_rounds,
                    if event.travel_rounds == 1 { "" } else { "s" },
                    event.text
                ),
            ),
            EventKind::Movement => self.paint(dim, &format!("→ {}", event.text)),
            EventKind::Speech | EventKind::Action | EventKind::Unspecified => {
                let to = if event.target_name.is_empty() {
                    String::new()
                } else {
                    self.paint(dim, &format!(" (to {})", event.target_name))
                };
                let name = self.name(&event.speaker, &event.speaker_name);
                let body = if event.kind() == EventKind::Action {
                    self.paint(Style::new().italic(), &event.text)
                } else {
                    event.text.clone()
                };
                match &streamed {
                    // The words are already on screen: settle the line.
                    Some((seq, text)) if *seq == event.seq && text.trim() == event.text.trim() => {
                        println!("{to}");
                        return;
                    }
                    // The settled line only adds to the words (a closing full stop).
                    Some((seq, text))
                        if *seq == event.seq
                            && !text.trim().is_empty()
                            && event.text.trim().starts_with(text.trim()) =>
                    {
                        let rest = &event.text.trim()[text.trim().len()..];
                        println!("{rest}{to}");
                        return;
                    }
                    Some((_, text)) => {
                        if self.tty {
                            // The settled line differs from the words (a cut-off tail
                            // dropped): replace the streamed line on screen.
                            let shown = format!("{}: {text}", event.speaker_name);
                            erase_rows(console::measure_text_width(&shown));
                        } else {
                            println!();
                        }
                        format!("{name}{to}: {body}")
                    }
                    None => format!("{name}{to}: {body}"),
                }
            }
        };
        if streamed.is_some() && !matches!(event.kind(), EventKind::Speech | EventKind::Action) {
            println!();
        }
        println!("{line}");
    }
}

/// Moves the cursor to the start of a line of `width` columns that ends at the cursor,
/// and clears from there down.
fn erase_rows(width: usize) {
    let columns = usize::from(console::Term::stdout().size().1).max(1);
    let up = width.max(1).div_ceil(columns) - 1;
    let mut out = std::io::stdout().lock();
    // A closed stdout (its reader left) has nothing more to show.
    let _ = write!(out, "\r");
    if up > 0 {
        // A closed stdout (its reader left) has nothing more to show.
        let _ = write!(out, "\x1b[{up}A");
    }
    // A closed stdout (its reader left) has nothing more to show.
    let _ = write!(out, "\x1b[J");
}
