//! SillyTavern/TavernAI character cards: a PNG whose `chara` (V2, or V1) and `ccv3`
//! (V3) text chunks hold base64 JSON, or the JSON itself. V3 wins when a PNG holds both.
//!
//! A card keeps its `data` object whole, every field known or not, so a field this
//! build gives no meaning to (an `extensions` key, `assets`, a field of a later spec)
//! is carried through import and written back by export, not dropped. The accessors
//! read the fields the V2 and V3 specs define.
//!
//! The PNG is walked chunk by chunk (length, type, data, CRC), its image never decoded:
//! a card's chunks usually follow the image data, and a decoder would inflate every
//! pixel to reach them. Bounds, named in each refusal: the file's size, and chunks no
//! longer than what is left of it.

use serde_json::{Map, Value};

use crate::lore::{LoreError, Lorebook};

/// The largest card read: 20 MiB (a card is a portrait; its JSON is kilobytes).
pub const MAX_CARD_BYTES: usize = 20 * 1024 * 1024;

const PNG_SIGNATURE: &[u8; 8] = b"\x89PNG\r\n\x1a\n";

/// Which spec a card follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spec {
    /// TavernAI's flat object (no `spec`).
    V1,
    /// `chara_card_v2`.
    V2,
    /// `chara_card_v3`.
    V3,
}

impl Spec {
    /// The spec's name as a card writes it (`spec`); V1 has none.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::V1 => "",
            Self::V2 => "chara_card_v2",
            Self::V3 => "chara_card_v3",
        }
    }
}

/// Why a card was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CardError {
    #[error("the file is {size} bytes; a card is read up to {limit} bytes")]
    TooLarge { size: usize, limit: usize },
    #[error("not a card: neither a PNG nor a JSON object")]
    NotACard,
    #[error("damaged PNG: {0}")]
    Png(String),
    #[error("the PNG holds no character card (no `chara` or `ccv3` text chunk)")]
    NoCardChunk,
    #[error("the PNG's `{chunk}` chunk is not base64: {message}")]
    NotBase64 { chunk: String, message: String },
    #[error("{place} is not JSON: {message}")]
    NotJson { place: String, message: String },
    #[error(
        "{place}: `spec` is {spec}, a card spec this build does not know (chara_card_v2, chara_card_v3)"
    )]
    UnknownSpec { place: String, spec: String },
    #[error("{place}: field `{field}` {problem}")]
    Field {
        place: String,
        field: String,
        problem: String,
    },
    #[error("{place}: character_book: {error}")]
    Book { place: String, error: LoreError },
}

/// One character card.
#[derive(Debug, Clone, PartialEq)]
pub struct Card {
    pub spec: Spec,
    /// The card's `data` (V1: the whole object), as read.
    pub data: Map<String, Value>,
}

impl Card {
    /// A text field of `data` ("" when absent).
    #[must_use]
    pub fn text(&self, field: &str) -> &str {
        self.data
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// A list of texts of `data` (empty when absent).
    #[must_use]
    pub fn texts(&self, field: &str) -> Vec<String> {
        self.data
            .get(field)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default()
    }

    #[must_use]
    pub fn name(&self) -> &str {
        self.text("name")
    }

    /// A text field with the template's placeholders resolved: `{{char}}` (and the
    /// older `<BOT>`) is the card's name, `{{user}}` (and `<USER>`) is `user`, the
    /// name of whoever the character speaks with. Matched without regard to case, as
    /// SillyTavern matches them.
    #[must_use]
    pub fn resolved(&self, field: &str, user: &str) -> String {
        resolve_placeholders(self.text(field), self.name(), user)
    }

    /// The card's embedded `character_book`, read as a lorebook.
    pub fn book(&self) -> Result<Option<Lorebook>, LoreError> {
        match self.data.get("character_book") {
            None | Some(Value::Null) => Ok(None),
            Some(book) => Lorebook::from_value(book).map(Some),
        }
    }

    /// The card as V3 JSON: `spec`, `spec_version` and `data` (every field kept).
    #[must_use]
    pub fn to_v3_json(&self) -> Value {
        let mut card = Map::new();
        card.insert("spec".into(), Spec::V3.name().into());
        card.insert("spec_version".into(), "3.0".into());
        card.insert("data".into(), Value::Object(self.data.clone()));
        Value::Object(card)
    }
}

/// The card as a PNG that SillyTavern reads: a plain portrait-shaped image (a card
/// carried through a scenario keeps no picture) with the card as base64 JSON in a
/// `ccv3` text chunk (V3), and in a `chara` chunk as V2 for readers of the older spec.
pub fn to_png(card: &Card) -> Result<Vec<u8>, CardError> {
    use base64::Engine as _;
    const WIDTH: u32 = 4;
    const HEIGHT: u32 = 6;
    let encode =
        |value: &Value| base64::engine::general_purpose::STANDARD.encode(value.to_string());
    let mut v2 = Map::new();
    v2.insert("spec".into(), Spec::V2.name().into());
    v2.insert("spec_version".into(), "2.0".into());
    v2.insert("data".into(), Value::Object(card.data.clone()));
    let mut out = Vec::new();
    let failed = |e: png::EncodingError| CardError::Png(format!("cannot write the PNG: {e}"));
    {
        let mut encoder = png::Encoder::new(&mut out, WIDTH, HEIGHT);
        encoder.set_color(png::ColorType::Grayscale);
        encoder.set_depth(png::BitDepth::Eight);
        encoder
            .add_text_chunk("chara".into(), encode(&Value::Object(v2)))
            .map_err(failed)?;
        encoder
            .add_text_chunk("ccv3".into(), encode(&card.to_v3_json()))
            .map_err(failed)?;
        let mut writer = encoder.write_header().map_err(failed)?;
        writer
            .write_image_data(&[0x80; (WIDTH * HEIGHT) as usize])
            .map_err(failed)?;
        writer.finish().map_err(failed)?;
    }
    Ok(out)
}

/// `text` with `{{char}}`/`<BOT>` as `name` and `{{user}}`/`<USER>` as `user`, and its
/// Windows line ends (`\r\n`, common in cards) as `\n`.
#[must_use]
pub fn resolve_placeholders(text: &str, name: &str, user: &str) -> String {
    const PLACEHOLDERS: [(&str, bool); 4] = [
        ("{{char}}", true),
        ("<bot>", true),
        ("{{user}}", false),
        ("<user>", false),
    ];
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        let found = PLACEHOLDERS
            .iter()
            .find(|(p, _)| lower[at..].starts_with(p));
        match found {
            Some((placeholder, is_char)) => {
                out.push_str(if *is_char { name } else { user });
                at += placeholder.len();
            }
            None => {
                let c = text[at..].chars().next().unwrap_or_default();
                out.push(c);
                at += c.len_utf8().max(1);
            }
        }
    }
    if out.contains('\r') {
        out = out.replace("\r\n", "\n");
    }
    out
}

/// A card from a file's bytes: a PNG by its signature, otherwise JSON. `place` names
/// the file in errors.
pub fn read(bytes: &[u8], place: &str) -> Result<Card, CardError> {
    if bytes.len() > MAX_CARD_BYTES {
        return Err(CardError::TooLarge {
            size: bytes.len(),
            limit: MAX_CARD_BYTES,
        });
    }
    if bytes.starts_with(PNG_SIGNATURE) {
        read_png(bytes, place)
    } else if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{') {
        from_json(bytes, place)
    } else {
        Err(CardError::NotACard)
    }
}

/// The text chunks of a PNG, as (keyword, text), in file order.
pub fn text_chunks(bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, CardError> {
    let mut rest = bytes
        .strip_prefix(PNG_SIGNATURE.as_slice())
        .ok_or_else(|| CardError::Png("no PNG signature".into()))?;
    let mut out = Vec::new();
    let mut offset = PNG_SIGNATURE.len();
    loop {
        let Some((head, after)) = rest.split_at_checked(8) else {
            return Err(CardError::Png(format!(
                "the file ends inside a chunk header at byte {offset}"
            )));
        };
        let length = u32::from_be_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let kind = &head[4..8];
        let Some((data, after)) = after.split_at_checked(length) else {
            return Err(CardError::Png(format!(
                "chunk {:?} at byte {offset} claims {length} bytes; the file has {} left",
                String::from_utf8_lossy(kind),
                after.len()
            )));
        };
        let Some((crc, after)) = after.split_at_checked(4) else {
            return Err(CardError::Png(format!(
                "the file ends before the CRC of chunk {:?} at byte {offset}",
                String::from_utf8_lossy(kind)
            )));
        };
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(kind);
        hasher.update(data);
        if hasher.finalize().to_be_bytes() != crc {
            return Err(CardError::Png(format!(
                "chunk {:?} at byte {offset} fails its CRC",
                String::from_utf8_lossy(kind)
            )));
        }
        if kind == b"tEXt"
            && let Some(nul) = data.iter().position(|b| *b == 0)
        {
            let keyword = String::from_utf8_lossy(&data[..nul]).into_owned();
            out.push((keyword, data[nul + 1..].to_vec()));
        }
        if kind == b"IEND" {
            return Ok(out);
        }
        offset += 12 + length;
        rest = after;
    }
}

fn read_png(bytes: &[u8], place: &str) -> Result<Card, CardError> {
    let chunks = text_chunks(bytes)?;
    let find = |name: &str| {
        chunks
            .iter()
            .find(|(keyword, _)| keyword.eq_ignore_ascii_case(name))
    };
    let (keyword, text) = find("ccv3")
        .or_else(|| find("chara"))
        .ok_or(CardError::NoCardChunk)?;
    let json = base64_decode(text).map_err(|message| CardError::NotBase64 {
        chunk: keyword.clone(),
        message,
    })?;
    from_json(&json, &format!("{place}, chunk `{keyword}`"))
}

fn base64_decode(text: &[u8]) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    let text: Vec<u8> = text
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(&text)
        .map_err(|e| e.to_string())
}

/// A card from its JSON.
pub fn from_json(bytes: &[u8], place: &str) -> Result<Card, CardError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| CardError::NotJson {
        place: place.to_owned(),
        message: e.to_string(),
    })?;
    let Value::Object(mut object) = value else {
        return Err(CardError::NotJson {
            place: place.to_owned(),
            message: "not a JSON object".into(),
        });
    };
    let spec = match object.get("spec") {
        None => Spec::V1,
        Some(Value::String(s)) if s == "chara_card_v2" => Spec::V2,
        Some(Value::String(s)) if s == "chara_card_v3" => Spec::V3,
        Some(other) => {
            return Err(CardError::UnknownSpec {
                place: place.to_owned(),
                spec: dramatis_base::quote(
                    &other
                        .as_str()
                        .map_or_else(|| other.to_string(), str::to_owned),
                ),
            });
        }
    };
    let data = if spec == Spec::V1 {
        object
    } else {
        match object.remove("data") {
            Some(Value::Object(data)) => data,
            _ => {
                return Err(CardError::Field {
                    place: place.to_owned(),
                    field: "data".into(),
                    problem: "is missing or not an object".into(),
                });
            }
        }
    };
    let card = Card { spec, data };
    check(&card, place)?;
    Ok(card)
}

/// The fields the specs type, checked: a card must be named, texts are strings, lists
/// are lists of strings, and an embedded book reads.
fn check(card: &Card, place: &str) -> Result<(), CardError> {
    let problem = |field: &str, problem: &str| CardError::Field {
        place: place.to_owned(),
        field: field.to_owned(),
        problem: problem.to_owned(),
    };
    if card.name().trim().is_empty() {
        return Err(problem("name", "is missing or empty"));
    }
    for field in [
        "description",
        "personality",
        "scenario",
        "first_mes",
        "mes_example",
        "creator_notes",
        "system_prompt",
        "post_history_instructions",
        "creator",
        "character_version",
        "nickname",
    ] {
        if card
            .data
            .get(field)
            .is_some_and(|v| !v.is_string() && !v.is_null())
        {
            return Err(problem(field, "is not a string"));
        }
    }
    for field in ["alternate_greetings", "group_only_greetings", "tags"] {
        let ok = match card.data.get(field) {
            None | Some(Value::Null) => true,
            Some(Value::Array(items)) => items.iter().all(Value::is_string),
            Some(_) => false,
        };
        if !ok {
            return Err(problem(field, "is not a list of strings"));
        }
    }
    card.book().map_err(|error| CardError::Book {
        place: place.to_owned(),
        error,
    })?;
    Ok(())
}

#[cfg(test)]
mod tests;
