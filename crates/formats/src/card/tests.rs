use std::path::PathBuf;

use super::*;

fn fixture(name: &str) -> Option<PathBuf> {
    crate::fixture("cards", name)
}

fn card(name: &str) -> Option<Card> {
    let path = fixture(name)?;
    Some(read(&std::fs::read(&path).expect("fixture"), name).expect("a card"))
}

/// A PNG of `chunks` after the signature, each with its right CRC.
fn png(chunks: &[(&[u8; 4], &[u8])]) -> Vec<u8> {
    let mut out = PNG_SIGNATURE.to_vec();
    for (kind, data) in chunks {
        out.extend(u32::try_from(data.len()).expect("small").to_be_bytes());
        out.extend(*kind);
        out.extend(*data);
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(*kind);
        hasher.update(data);
        out.extend(hasher.finalize().to_be_bytes());
    }
    out
}

fn text_chunk(keyword: &str, text: &str) -> Vec<u8> {
    let mut data = keyword.as_bytes().to_vec();
    data.push(0);
    data.extend(text.as_bytes());
    data
}

fn base64(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

const IHDR: &[u8] = &[0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0];

#[test]
fn sillytaverns_cards_read_with_v3_winning_and_every_field_kept() {
    let Some(seraphina) = card("default_Seraphina.png") else {
        return;
    };
    assert_eq!((seraphina.spec, seraphina.name()), (Spec::V2, "Seraphina"));
    let book = seraphina.book().expect("reads").expect("embedded");
    assert_eq!((book.name.as_str(), book.entries.len()), ("Eldoria", 4));
    let Some(staging) = card("default_Seraphina.staging.png") else {
        return;
    };
    assert_eq!(staging.spec, Spec::V3, "the ccv3 chunk wins over chara");
    assert_eq!(staging.name(), "Seraphina");
    let Some(chan) = card("Default-chan.png") else {
        return;
    };
    assert_eq!(chan.spec, Spec::V3);
    assert_eq!(chan.texts("alternate_greetings").len(), 2);
    assert!(chan.book().expect("reads").is_none());
    let Some(v3) = card("ccv3_st_export_like.json") else {
        return;
    };
    assert_eq!(v3.spec, Spec::V3);
    assert!(
        v3.data.contains_key("assets"),
        "a field with no meaning here is kept"
    );
    assert!(!v3.texts("group_only_greetings").is_empty());
    let Some(v2) = card("full_v2_card.json") else {
        return;
    };
    assert_eq!((v2.spec, v2.name()), (Spec::V2, "Aurora"));
    assert_eq!(v2.data["extensions"]["custom_field"], "should be preserved");
    assert_eq!(v2.texts("tags"), ["oracle", "fantasy", "mystical"]);
    // V3 JSON out holds the same data.
    assert_eq!(v2.to_v3_json()["data"], Value::Object(v2.data.clone()));
}

#[test]
fn a_png_without_a_card_or_with_a_broken_chunk_gets_one_clear_error() {
    let plain = png(&[(b"IHDR", IHDR), (b"IEND", b"")]);
    assert_eq!(read(&plain, "a.png"), Err(CardError::NoCardChunk));
    let other = png(&[
        (b"IHDR", IHDR),
        (b"tEXt", &text_chunk("Comment", "made by hand")),
        (b"IEND", b""),
    ]);
    assert_eq!(read(&other, "a.png"), Err(CardError::NoCardChunk));
    let garbled = png(&[
        (b"tEXt", &text_chunk("chara", "not*base64!")),
        (b"IEND", b""),
    ]);
    assert!(matches!(
        read(&garbled, "a.png"),
        Err(CardError::NotBase64 { chunk, .. }) if chunk == "chara"
    ));
    let not_json = png(&[
        (b"tEXt", &text_chunk("chara", &base64("hello"))),
        (b"IEND", b""),
    ]);
    let error = read(&not_json, "a.png").expect_err("not JSON");
    assert!(
        error
            .to_string()
            .starts_with("a.png, chunk `chara` is not JSON"),
        "{error}"
    );
    let future = png(&[
        (
            b"tEXt",
            &text_chunk(
                "ccv3",
                &base64(r#"{"spec":"chara_card_v9","data":{"name":"X"}}"#),
            ),
        ),
        (b"IEND", b""),
    ]);
    assert_eq!(
        read(&future, "a.png"),
        Err(CardError::UnknownSpec {
            place: "a.png, chunk `ccv3`".into(),
            spec: "\"chara_card_v9\"".into()
        })
    );
    // A chunk that claims more than the file holds, and one whose CRC is wrong.
    let mut truncated = png(&[(b"IHDR", IHDR), (b"IEND", b"")]);
    truncated.truncate(20);
    assert!(matches!(read(&truncated, "a.png"), Err(CardError::Png(m)) if m.contains("claims")));
    let mut corrupt = png(&[(b"IHDR", IHDR), (b"IEND", b"")]);
    corrupt[20] ^= 0xff;
    assert!(matches!(read(&corrupt, "a.png"), Err(CardError::Png(m)) if m.contains("CRC")));
}

#[test]
fn a_huge_file_or_one_that_is_no_card_is_refused_before_it_is_parsed() {
    let huge = vec![0u8; 30 * 1024 * 1024];
    assert_eq!(
        read(&huge, "big.png"),
        Err(CardError::TooLarge {
            size: 30 * 1024 * 1024,
            limit: MAX_CARD_BYTES
        })
    );
    assert_eq!(read(b"GIF89a", "a.gif"), Err(CardError::NotACard));
    let nameless = from_json(
        br#"{"spec":"chara_card_v2","data":{"description":"x"}}"#,
        "c.json",
    );
    assert!(matches!(nameless, Err(CardError::Field { field, .. }) if field == "name"));
    let typed = from_json(br#"{"name":"A","tags":"one"}"#, "c.json");
    assert!(matches!(typed, Err(CardError::Field { field, .. }) if field == "tags"));
}

#[test]
fn placeholders_resolve_to_the_character_and_whoever_it_speaks_with() {
    assert_eq!(
        resolve_placeholders(
            "<START>\n{{user}}: Hi?\n{{Char}}: I am {{char}}. <BOT> sees <USER>.",
            "Aurora",
            "Mara"
        ),
        "<START>\nMara: Hi?\nAurora: I am Aurora. Aurora sees Mara."
    );
    assert_eq!(
        resolve_placeholders("naïve {{user}}—é", "A", "B"),
        "naïve B—é"
    );
    assert_eq!(
        resolve_placeholders("one\r\ntwo\r\n", "A", "B"),
        "one\ntwo\n"
    );
    let Some(v2) = card("full_v2_card.json") else {
        return;
    };
    assert_eq!(
        v2.resolved("system_prompt", "Mara"),
        "You are Aurora, a mystical oracle."
    );
}

#[test]
fn an_unknown_spec_is_quoted_short_and_numbers_survive_the_round_trip() {
    let spec = "v".repeat(5_000);
    let json = format!(r#"{{"spec": "{spec}", "data": {{"name": "A"}}}}"#);
    let error = from_json(json.as_bytes(), "c.json")
        .expect_err("refused")
        .to_string();
    assert!(error.len() < 300, "{} bytes: {error}", error.len());
    assert!(error.contains("5000 characters"), "{error}");
    // A number a card carries (an extension's weight) reads back as it was written.
    let json = r#"{"name": "A", "extensions": {"w": 0.30000000000000004, "x": 1.7976931348623157e308, "y": 5e-324, "z": 2.2250738585072014e-308}}"#;
    let card = from_json(json.as_bytes(), "c.json").expect("a card");
    let again = from_json(
        &serde_json::to_vec(&card.to_v3_json()).expect("ok"),
        "again",
    )
    .expect("ok");
    assert_eq!(again.data, card.data);
}

#[test]
fn a_card_written_as_png_reads_back_whole_with_v3_winning() {
    let Some(card) = card("default_Seraphina.png") else {
        return;
    };
    let png = to_png(&card).expect("written");
    let chunks = text_chunks(&png).expect("a PNG");
    let keywords: Vec<&str> = chunks.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keywords, ["chara", "ccv3"]);
    let back = read(&png, "out.png").expect("reads");
    assert_eq!(back.spec, Spec::V3);
    assert_eq!(back.data, card.data);
}
