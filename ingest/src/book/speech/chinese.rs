//! Chinese speech tags and acting: a lead-in before the quote names its speaker
//! (`雨村笑道：`), and a verb of doing after a name shows that person acting.

use super::super::scenes::Tag;
use super::super::text::{Namer, is_han, sentences};

/// Chinese verbs of speech a lead-in ends with, longest first: `笑道`, `问道` and the
/// rest end in `道` or `说`.
const CHINESE_SPEECH_ENDS: &[&str] = &[
    "道", "说", "說", "问", "問", "答", "曰", "叹", "嘆", "骂", "罵", "嚷", "喊", "喝", "叫",
];

/// Words a Chinese lead-in may hold before its verb with no subject written: the one
/// speaking is who spoke or acted last (`因笑道：`, `听了，忙道：`).
const CHINESE_NO_SUBJECT: &[&str] = &[
    "他", "她", "因", "便", "又", "忙", "笑", "遂", "乃", "也", "只", "却", "卻", "方", "一面",
    "连忙", "連忙", "听了", "聽了", "说", "說", "冷笑", "陪笑", "含笑", "点头", "點頭", "叹", "嘆",
    "回", "答", "问", "問", "了", "着", "著", "就", "才", "还", "還", "已", "亦", "仍", "都", "先",
    "再", "自", "早", "越发", "越發", "正", "且", "听说", "聽說", "见", "見", "看", "此", "这",
    "這", "时", "時", "一", "拍手", "摇头", "搖頭", "向", "对", "對", "与", "與",
];

/// A Chinese lead-in: the narration before a quote ends in a verb of speech and `：`
/// (or `，`, or the verb alone): `雨村笑道：`, `贾母因问黛玉：`, `宝玉听了，忙笑道：`. The
/// speaker is the first name of its sentence (the one addressed comes after); a
/// sentence with no name whose other words are none a subject needs (`因笑道：`) is
/// untagged, for the conversation to give; any other words before the verb are
/// someone off the list (`那道人道：`).
pub(super) fn lead_in(narration: &str, namer: &Namer) -> Option<Tag> {
    let clause = narration
        .trim_end()
        .trim_end_matches(['：', ':', '，', ',', '　'])
        .trim_end();
    if !CHINESE_SPEECH_ENDS.iter().any(|v| clause.ends_with(v)) {
        return None;
    }
    let sentence = sentences(clause).into_iter().last()?;
    if let Some(m) = namer.mentions(sentence).into_iter().next() {
        if m.shared {
            let owners = namer.owners(&m, sentence);
            return Some(Tag::OneOf(owners.into_iter().map(str::to_owned).collect()));
        }
        return Some(Tag::Focus(m.character.to_owned()));
    }
    // The words before the verb, with the clause marks and what needs no subject
    // taken off.
    let last = sentence
        .rsplit(['，', ',', '；', '、'])
        .next()
        .unwrap_or(sentence);
    let mut head = last;
    for v in CHINESE_SPEECH_ENDS {
        if let Some(h) = head.strip_suffix(v) {
            head = h;
            break;
        }
    }
    let mut rest = head.trim();
    'strip: loop {
        for w in CHINESE_NO_SUBJECT {
            if let Some(r) = rest.strip_prefix(w).or_else(|| rest.strip_suffix(w)) {
                rest = r;
                continue 'strip;
            }
        }
        break;
    }
    let rest = rest.trim_matches(|c: char| !is_han(c));
    // Someone off the list is a short noun (`那道人`, `丫鬟们`): one character left is a
    // word of the clause ("来"), a verb in it a clause with no subject written
    // (`拍着手笑嚷`, `嘱咐`), and a kinship word someone's relation, not a name.
    let n = rest.chars().count();
    let verb = rest
        .chars()
        .any(|c| CHINESE_ACTS.contains(c) || "言嘱囑商议議".contains(c));
    let kin = [
        "母亲", "母親", "父亲", "父親", "哥哥", "姐姐", "妹妹", "兄弟", "嫂子",
    ]
    .iter()
    .any(|k| rest.contains(k));
    ((2..=4).contains(&n) && !verb && !kin).then(|| Tag::Named(rest.to_owned()))
}

/// Words that may come between a Chinese subject and its verb: adverbs of manner and
/// time (`宝玉便起身`, `黛玉忙笑`).
const CHINESE_ADVERBS: &[&str] = &[
    "连忙", "連忙", "一面", "早已", "已经", "已經", "方才", "正在", "只得", "只好", "不觉", "不覺",
    "便", "又", "也", "都", "就", "才", "忙", "早", "却", "卻", "因", "遂", "乃", "方", "还", "還",
    "已", "正", "仍", "只", "亦", "先", "再", "自", "竟", "即", "且", "一",
];

/// First characters of Chinese verbs of doing, seeing and hearing (a subject followed
/// by one lived what the sentence tells). Speech is not among them: a quote gives its
/// speaker.
const CHINESE_ACTS: &str = "来來去走进進出见見听聽看望瞧笑哭拉拿起坐站立回转轉叫命喝吃送接入到跟随隨携攜拜行跪叹嘆点點摇搖抬低推递遞写寫读讀念唱听躺睡醒梦夢想思忖记記忙赶趕逃跑留住辞辭别別谢謝请請让讓陪伴扶抱拍打放收取买買卖賣带帶领領引叩磕揖迎出翻换換穿戴脱脫洗梳吩咐嘱囑答应應闻聞觉覺知晓曉认認遇逢过過";

/// Words that may stand before the subject of a Chinese clause: a storyteller's "now",
/// "just then he saw", a conjunction, a time.
const CLAUSE_OPENERS: &[&str] = &[
    "却说", "卻說", "且说", "且說", "话说", "話說", "只见", "只見", "忽见", "忽見", "但见", "但見",
    "原来", "原來", "谁知", "誰知", "于是", "於是", "当下", "當下", "此时", "此時", "一时", "一時",
    "次日", "这里", "這裏", "這裡", "那里", "那裏", "如今", "后来", "後來", "因此", "便", "又",
    "因", "遂", "这", "這", "那", "忽", "乃", "也", "就", "才", "方",
];

/// Whether a name after `before` (the sentence up to it) opens its clause: nothing but
/// clause openers stands between it and the last punctuation mark. A name inside a
/// clause is its object or part of a word (找宝玉去, 猫儿狗儿打架): not who acts.
pub(super) fn opens_clause(before: &str) -> bool {
    let clause = before
        .rfind(|c: char| !is_han(c) && !c.is_alphanumeric())
        .map_or(before, |at| {
            let mark = before[at..].chars().next().map_or(1, char::len_utf8);
            &before[at + mark..]
        });
    let mut rest = clause;
    'strip: while !rest.is_empty() {
        for opener in CLAUSE_OPENERS {
            if let Some(r) = rest.strip_prefix(opener) {
                rest = r;
                continue 'strip;
            }
        }
        return false;
    }
    true
}

/// [`super::acts_after`] for Chinese: after the name (its `的`, `之`, `们` or a comma
/// excluded), adverbs skipped, the first character begins a verb of doing.
pub(super) fn acts_after(rest: &str) -> bool {
    let mut rest = rest;
    'skip: loop {
        for a in CHINESE_ADVERBS {
            if let Some(r) = rest.strip_prefix(a) {
                rest = r;
                continue 'skip;
            }
        }
        break;
    }
    rest.chars()
        .next()
        .is_some_and(|c| CHINESE_ACTS.contains(c))
}
