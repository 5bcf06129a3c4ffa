//! Chinese books: ids, headings, sentences, wrapped lines, quotes, speech tags, names
//! without capitals, acting and describing, and cuts inside a paragraph. Each test
//! fails without its rule.

use super::super::partition::partition;
use super::super::speech::{acts_after, opens_clause};
use super::super::text::{
    Namer, Segment, is_description, join_wrapped, parse_characters, quoted_paragraphs, read_book,
    sentences, word_count,
};
use super::{all_speakers, assert_on_stage, attributed};

#[test]
fn a_chinese_name_s_id_is_its_pinyin_the_same_in_either_script_and_homophones_stay_apart() {
    let simplified = parse_characters("林黛玉 | 黛玉, 林姑娘\n贾宝玉 | 宝玉\n王仁\n王人\n")
        .expect("a Chinese list loads");
    let ids: Vec<&str> = simplified.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["lindaiyu", "jiabaoyu", "wangren", "wangren-4"]);
    let traditional = parse_characters("賈寶玉 | 寶玉\n").expect("traditional loads");
    assert_eq!(traditional[0].id, "jiabaoyu");
    // One person listed twice is still refused.
    let twice = parse_characters("林黛玉 | 黛玉\n黛玉\n").expect_err("listed twice");
    assert!(twice.to_string().contains("already on line 1"), "{twice}");
}

#[test]
fn chapter_headings_are_di_n_hui_with_the_couplet_and_a_sentence_starting_so_is_none() {
    let body = "甄士隐在书房闲坐，手倦抛书，伏几少憩，不觉朦胧睡去，梦至一处，不辨是何地方。\
                忽见那厢来了一僧一道，且行且谈，说些因果之事，士隐听得明白，便上前施礼。";
    let text = format!(
        "红楼梦\n\n第一回  甄士隐梦幻识通灵 贾雨村风尘怀闺秀\n\n    {body}\n\n\
         第二回  贾夫人仙逝扬州城 冷子兴演说荣国府\n\n    {body}\n    \
         第四回中既将薛家母子在荣府中寄居等事略已表明，此回暂可不写了。{body}\n"
    );
    let p = partition(&text);
    assert_eq!(p.chapters, 2, "{p:?}");
    assert_eq!(p.title.as_deref(), Some("红楼梦"));
    // The heading and its couplet are no chapter's text.
    assert!(!text[p.scenes[0].start..p.scenes[0].end].contains("风尘怀闺秀"));
}

#[test]
fn a_heading_with_verse_right_under_it_opens_a_chapter_and_running_headers_are_dropped() {
    // The 西游记 file: a running header over each chapter, then the heading with the
    // opening verse on the next line; the contents list heads before them.
    let verse = "诗曰：\n混沌未分天地乱，茫茫渺渺无人见。\n自从盘古破鸿蒙，开辟从兹清浊辨。\n";
    let body = "盖闻天地之数，有十二万九千六百岁为一元。将一元分为十二会，乃子、丑、寅、\
                卯、辰、巳、午、未、申、酉、戌、亥之十二支也。每会该一万八百岁。";
    let text = format!(
        "西游记\n\n第001回　灵根育孕源流出　心性修持大道生\n第002回　悟彻菩提真妙理　断魔归本合元神\n\
         第003回　四海千山皆拱伏　九幽十类尽除名\n\n\
         吴承恩--西游记--第一回　灵根育孕源流出　心性修持大道生\n\n\
         第一回　灵根育孕源流出　心性修持大道生\n{verse}\n    {body}\n\n\
         \t\t吴承恩--西游记--第二回　悟彻菩提真妙理　断魔归本合元神\n\n\
         第二回　悟彻菩提真妙理　断魔归本合元神\n{verse}\n    {body}\n"
    );
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("xiyouji.txt");
    std::fs::write(&path, &text).expect("the book is written");
    let book = read_book(&path).expect("the book reads");
    assert!(!book.contains("吴承恩--"), "running headers are dropped");
    let p = partition(&book);
    assert_eq!(p.chapters, 2, "{p:?}");
    let first = &book[p.scenes[0].start..p.scenes[0].end];
    assert!(
        first.contains("混沌未分") && !first.contains("灵根育孕"),
        "{first}"
    );
}

#[test]
fn a_chinese_file_with_a_paragraph_on_each_line_gets_its_paragraphs() {
    // 西游记's file: no blank lines and no indents, each line a paragraph that ends a
    // sentence. Read as one block, a chapter would be one paragraph.
    let line = "那猴在山中，却会行走跳跃，食草木，饮涧泉，采山花，觅树果，与狼虫为伴，\
                虎豹为群，獐鹿为友，猕猿为亲，夜宿石崖之下，朝游峰洞之中。";
    let said = "众猴拍手称扬道：“好水！好水！原来此处远通山脚之下，直接大海之波。”";
    let mut text = String::from("第一回　灵根育孕源流出　心性修持大道生\n");
    for _ in 0..40 {
        text.push_str(line);
        text.push('\n');
        text.push_str(said);
        text.push('\n');
    }
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("book.txt");
    std::fs::write(&path, &text).expect("the book is written");
    let book = read_book(&path).expect("the book reads");
    let paragraphs = super::super::text::paragraphs(&book);
    assert_eq!(paragraphs.len(), 81, "the heading and 80 paragraphs");
}

#[test]
fn a_chinese_paragraph_is_cut_where_the_storyteller_moves_on_but_not_inside_a_quote() {
    let day = "宝玉在房中坐着看书，袭人在旁做针线，两人说了许多闲话，又吃了茶，\
               直到天色将晚，方各自歇息，一夜无话，院中静悄悄的，只有檐下铁马叮当作响。";
    let text = format!(
        "第一回  甲 乙\n\n    {day}{day}黛玉笑道：“次日再来罢。”{day}次日宝玉起来，{day}{day}{day}\n"
    );
    let p = partition(&text);
    assert_eq!(p.scenes.len(), 2, "{:?}", p.scenes);
    assert!(text[p.scenes[1].start..].starts_with("次日宝玉起来"));
}

#[test]
fn chinese_sentences_end_at_full_stops_with_their_closing_marks_and_wrapped_lines_join() {
    assert_eq!(
        sentences("甲来了。乙去了！丙呢？他道：“罢了。”然后走了"),
        [
            "甲来了。",
            "乙去了！",
            "丙呢？",
            "他道：“罢了。”",
            "然后走了"
        ]
    );
    // A Chinese line broken mid-word joins with no space; English keeps its space,
    // curly quotes or not.
    assert_eq!(join_wrapped("士隐笑\n道：“请坐。”\n"), "士隐笑道：“请坐。”");
    assert_eq!(
        join_wrapped("“Come,” he\nsaid.”\n“Well"),
        "“Come,” he said.” “Well"
    );
    assert_eq!(word_count("宝玉笑道 and then"), 6);
}

#[test]
fn pdf_page_markers_are_dropped_and_the_paragraph_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("book.txt");
    std::fs::write(&path, "    士隐见女儿越发生得粉装玉琢，\n\n----------------------- Page 2-----------------------\n\n乖觉可喜。\n")
        .expect("write");
    let text = read_book(&path).expect("reads");
    assert!(!text.contains("Page"), "{text}");
    assert_eq!(
        join_wrapped(&text),
        "士隐见女儿越发生得粉装玉琢，乖觉可喜。"
    );
}

#[test]
fn chinese_names_are_found_without_capitals_or_spaces_and_a_demonstrative_describes() {
    let list = parse_characters("贾宝玉 | 宝玉\n茫茫大士 | 那僧\n").expect("list");
    let namer = Namer::new(&list);
    let found: Vec<&str> = namer
        .mentions("宝玉笑道那僧来了")
        .iter()
        .map(|m| m.character)
        .collect();
    assert_eq!(found, ["jiabaoyu", "mangmangdashi"]);
    assert!(is_description("那僧"));
    assert!(!is_description("宝玉"));
}

#[test]
fn a_chinese_lead_in_names_its_speaker_first_and_someone_off_the_list_by_its_words() {
    let list = "贾宝玉 | 宝玉\n林黛玉 | 黛玉\n";
    let text = "宝玉和黛玉坐在房中。\n\n黛玉见了宝玉，便道：“你来了。”宝玉笑道：“我来了。”\
                那道人道：“好。”黛玉听了，因笑道：“罢了。”";
    let scene = attributed(list, text);
    // "黛玉见了宝玉，便道：" is Daiyu's: the first name of the lead-in's sentence, the
    // one she sees after it; "那道人" is someone off the list.
    assert_eq!(
        all_speakers(&scene),
        ["lindaiyu", "jiabaoyu", "other:那道人", "lindaiyu"]
    );
}

#[test]
fn a_chinese_name_acts_when_a_verb_of_doing_follows_it_adverbs_skipped() {
    assert!(acts_after("便起身走了"));
    assert!(acts_after("听了，心中纳闷"));
    assert!(!acts_after("的丫头"));
    assert!(!acts_after("道：“来了。”"));
}

#[test]
fn a_phrase_cited_in_quotes_inside_a_sentence_is_narration_not_a_line() {
    let list = "贾宝玉 | 宝玉\n贾母\n";
    let text = "宝玉因知他本姓花，又曾见旧人诗句有“花气袭人”之句，遂回明贾母，更名袭人。\n\n\
                贾母笑道：“好。”宝玉也不叫“姐姐”了，只说：“你来。”";
    let scene = attributed(list, text);
    // Two lines, not four: “花气袭人” and “姐姐” are what the sentences cite.
    assert_eq!(all_speakers(&scene), ["jiamu", "jiabaoyu"]);
    let paragraphs = quoted_paragraphs(text);
    assert!(
        matches!(&paragraphs[0].segments[..], [Segment::Narration(n)] if n.contains("“花气袭人”之句")),
        "{:?}",
        paragraphs[0].segments
    );
}

#[test]
fn a_chinese_name_acts_only_where_it_opens_its_clause() {
    assert!(opens_clause(""));
    assert!(opens_clause("却说"));
    assert!(opens_clause("众人见了，只见"));
    assert!(opens_clause("尤氏说道：“"));
    // An object, and a name that is part of a word: neither is the one who acts.
    assert!(!opens_clause("我叫他兄弟到那边府里又找"));
    assert!(!opens_clause("嘱咐小丫头们好生看着猫儿"));
    // English is read as before.
    assert!(opens_clause("and then "));
}

#[test]
fn a_chinese_paragraph_is_cut_where_its_people_go_to_another_place() {
    let day = "宝玉在房中坐着看书，袭人在旁做针线，两人说了许多闲话，又吃了茶，\
               直到天色将晚，方各自歇息，一夜无话，院中静悄悄的，只有檐下铁马叮当作响。";
    let text = format!(
        "第一回  甲 乙\n\n    {day}{day}黛玉笑道：“回到房中罢。”{day}他二人道了扰，一径回至贾母\n\
         房中。{day}{day}{day}\n"
    );
    let p = partition(&text);
    // Once, where the narration moves them; the line that only says it does not.
    assert_eq!(p.scenes.len(), 2, "{:?}", p.scenes);
    assert!(text[p.scenes[1].start..].starts_with("他二人道了扰"));
}

#[test]
fn a_chinese_subject_that_withdraws_is_off_the_stage_and_one_who_lets_another_go_stays() {
    let list = "贾蓉\n王熙凤 | 凤姐\n贾瑞\n";
    let text = "凤姐和贾蓉、贾瑞在房中说话。\n\n贾蓉答应个是，抿着嘴儿一笑，方慢慢退去。\n\n\
                贾瑞不敢止他，只得随他去了。\n\n凤姐笑道：“好。”贾瑞道：“我也该走。”说着便起身出去了。\n\n\
                凤姐道：“去罢。”";
    let scene = attributed(list, text);
    // 贾蓉 goes after paragraph 1; 贾瑞, who let someone go, only after "说着…出去了".
    assert_eq!(scene.exits.get("jiarong"), Some(&2), "{:?}", scene.exits);
    assert_eq!(scene.exits.get("jiarui"), Some(&4), "{:?}", scene.exits);
    assert!(!scene.exits.contains_key("wangxifeng"));
    assert_on_stage(&scene, 3, "jiarong", false);
    assert_on_stage(&scene, 3, "jiarui", true);
    assert_on_stage(&scene, 3, "wangxifeng", true);
    // "说着便起身出去了" names no one: the one who just spoke goes.
    assert_on_stage(&scene, 4, "jiarui", false);
    assert_on_stage(&scene, 4, "wangxifeng", true);
}
