"""Tool search in Chinese, Japanese, Korean and Thai, and in text mixing them with English.

The catalog is bench/data/multilingual_tools.json (bench/search_quality.py --multilingual
scores all of its requests); these tests pin a few of them and the tokenizer rules behind them.
(One search through a real bridge: tests/interaction/test_search_across_languages.py.)
"""

from __future__ import annotations

import math

import pytest
from search_support import MULTILINGUAL_ENTRIES, indexed

from bridge.search.index import IndexedTool, SearchHit, ToolIndex
from bridge.search.tokenizer import (
    compact,
    letter_trigrams,
    mostly_in,
    query_terms,
    script_of,
    scripts_of_languages,
    split_words,
    terms,
    words,
)


@pytest.fixture(scope="module")
def catalog() -> ToolIndex:
    return ToolIndex(map(indexed, MULTILINGUAL_ENTRIES))


def keys(hits: list[SearchHit]) -> list[str]:
    return [hit.key for hit in hits]


# --- the cases -----------------------------------------------------------------------


def test_a_chinese_word_inside_a_description_finds_the_tool() -> None:
    index = ToolIndex([
        IndexedTool("confirm", "confirm", "在执行转账之前请用户确认"),
        IndexedTool("weather", "weather", "查询城市的天气预报"),
        IndexedTool("notes", "notes", "保存一条笔记"),
    ])
    assert keys(index.search("确认转账")) == ["confirm"]
    assert keys(index.search("天气")) == ["weather"]


@pytest.mark.parametrize(("query", "expected"), [
    ("确认转账", "confirm_transfer"),
    ("天气", "get_weather_forecast"),
    ("上海这周天气怎么样", "get_weather_forecast"),
    ("明天北京会下雨吗", "get_weather_forecast"),  # "下雨" meets "降雨" at 雨
    ("把这段话翻译成英文", "translate_text"),
    ("我的包裹到哪了", "track_package"),
])
def test_chinese_requests(catalog: ToolIndex, query: str, expected: str) -> None:
    assert keys(catalog.search(query))[0] == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("明日の東京の天気は？", "get_weather_jp"),
    ("予定を追加", "add_calendar_event_jp"),
    ("この文を英語に訳して", "translate_jp"),
    ("ﾘﾏｲﾝﾀﾞｰ", "set_reminder"),  # half-width katakana, NFKC makes it リマインダー
    # Kanji alone, where the description has kana around them: 週, 間, 報, 営 and 時 are folded
    # as Traditional Chinese characters are, the same way in tool and request.
    ("週間予報", "get_weather_jp"),
    ("営業時間", "search_restaurants"),
    ("記事 要約", "summarize_page"),
])
def test_japanese_requests(catalog: ToolIndex, query: str, expected: str) -> None:
    assert keys(catalog.search(query))[0] == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("잔액 조회", "check_balance"),  # the description says "잔액을 조회합니다": particles and endings glued on
    ("주소를 입력란에 채워줘", "fill_form_kr"),
    ("이 문장을 영어로 번역해줘", "translate_kr"),
    ("카톡 보내기", "send_kakaotalk"),  # short for "카카오톡으로 ... 보냅니다": 카, 톡, 보 in common
])
def test_korean_requests(catalog: ToolIndex, query: str, expected: str) -> None:
    assert keys(catalog.search(query))[0] == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("พรุ่งนี้กรุงเทพฝนจะตกไหม", "get_weather_th"),  # "will it rain in Bangkok tomorrow?"
    ("แปลภาษา", "translate_th"),
    ("หาที่พักที่เชียงใหม่ช่วงสุดสัปดาห์", "book_hotel_th"),
])
def test_thai_requests(catalog: ToolIndex, query: str, expected: str) -> None:
    assert keys(catalog.search(query))[0] == expected


@pytest.mark.parametrize(("query", "expected"), [
    ("用GitHub创建issue", "create_issue"),  # no spaces: the Latin words are cut out all the same
    ("新建一个GitHub issue", "create_issue"),  # 新建 and 创建 share 建
    ("把GitHub的issue关了", "close_issue"),
    ("在ＧｉｔＨｕｂ上搜代码", "search_code"),  # full-width Latin
])
def test_mixed_language_requests(query: str, expected: str) -> None:
    # The English words are in every tool but one: the Chinese ones decide.
    index = ToolIndex([
        IndexedTool("create_issue", "create_issue", "在 GitHub 仓库中创建 issue，填写标题、描述和标签"),
        IndexedTool("close_issue", "close_issue", "关闭 GitHub 上已经解决的 issue，并写一条评论说明原因"),
        IndexedTool("search_code", "search_code", "在 GitHub 中搜索代码和 issue"),
        IndexedTool("notes", "notes", "保存一条笔记"),
    ])
    assert keys(index.search(query))[0] == expected


def test_most_requests_of_the_catalog_find_their_tool_in_the_top_five(catalog: ToolIndex) -> None:
    # All of the catalog's Chinese, Japanese and Korean requests, as bench/search_quality.py
    # counts them; some ask with words no description has ("雾霾", "치킨"), so not all.
    ranks = []
    for entry in MULTILINGUAL_ENTRIES:
        if entry["lang"] in ("zh", "ja", "ko"):
            for query in entry["queries"]:
                found = keys(catalog.search(query, limit=10))
                ranks.append(found.index(entry["name"]) + 1 if entry["name"] in found else math.inf)
    assert len(ranks) > 100
    assert sum(rank <= 5 for rank in ranks) / len(ranks) >= 0.8


@pytest.mark.parametrize(("query", "expected"), [
    # Simplified requests for tools a Taiwan or Hong Kong page describes in Traditional characters
    ("预约明天下午的门诊", "book_clinic_appointment"),  # 預約門診
    ("缴电费", "pay_electricity_bill"),  # 繳納電費
    ("把文件上传到云盘", "upload_to_cloud_drive"),  # 上傳到雲端硬碟
    # and Traditional requests for tools described in Simplified ones
    ("轉帳前先跟我確認", "confirm_transfer"),  # 确认: 帳 is not 账, but 確認 is 确认
    ("在行事曆新增一個會議", "create_calendar_event"),
])
def test_traditional_and_simplified_requests_find_tools_in_the_other_script(catalog: ToolIndex, query: str,
                                                                            expected: str) -> None:
    assert keys(catalog.search(query))[0] == expected


def test_a_traditional_request_finds_a_simplified_tool_and_the_reverse() -> None:
    index = ToolIndex([
        IndexedTool("weather", "weather", "查詢城市的天氣預報"),  # as a page in Taiwan writes it
        IndexedTool("history", "history", "查询账户最近的转账记录"),
        IndexedTool("tickets", "tickets", "预订今天的电影票"),  # 天 and 预 as the request writes them
        IndexedTool("notes", "notes", "保存一條筆記"),  # 記 as the request writes it
    ])
    assert keys(index.search("天气预报"))[0] == "weather"
    assert keys(index.search("轉賬記錄"))[0] == "history"


# --- the tokenizer ---------------------------------------------------------------------------


def test_traditional_characters_are_folded_to_simplified_ones() -> None:
    assert terms("天氣") == terms("天气") == ["天气", "天", "气"]
    assert split_words("城市的天氣預報") == split_words("城市的天气预报") == ["城市的天气预报"]
    assert split_words("用GitHub建立發票") == ["用", "git", "hub", "建立发票", "创建"]  # 建立: the mainland says 创建
    assert compact("天氣 App") == compact("天气 App") == "天气app"


def test_traditional_text_also_has_the_mainlands_word_for_each_word_taiwan_writes_differently() -> None:
    assert split_words("列印檔案") == ["列印档案", "打印", "文件"]
    assert split_words("請使用者登入網路") == ["请使用者登入网路", "用户", "登录", "网络"]
    # Where the mainland writes Taiwan's word too ("查询" beside "查找"), the text keeps its own.
    assert split_words("查詢城市的天氣預報") == ["查询城市的天气预报", "查找"]


def test_chinese_function_characters_are_left_out_of_a_querys_terms_but_not_out_of_its_pairs() -> None:
    found = query_terms("找一下便宜的蓝牙耳机")
    assert "的" not in found and "的蓝" in found and "蓝" in found
    assert query_terms("的") == ["的"]  # nothing else left: kept


def test_a_tool_sharing_only_a_function_character_with_the_request_is_not_found() -> None:
    index = ToolIndex([
        IndexedTool("weather", "weather", "查询城市的天气预报"),
        IndexedTool("profile", "profile", "显示我的个人资料"),  # "我" alone is all it shares
        IndexedTool("music", "music", "播放音乐"),
    ])
    assert keys(index.search("帮我看看天气怎么样")) == ["weather"]


def test_simplified_and_japanese_text_keep_their_own_words() -> None:
    assert split_words("列印文件") == ["列印文件"]  # no character folds: not told from Simplified, read as written
    assert split_words("設定を変更") == ["设定を変更"]  # Japanese: 設 folds, but kana say it is not Taiwan's
    assert split_words("打印文件") == ["打印文件"]


@pytest.mark.parametrize(("query", "expected"), [
    ("看视频", "play_video"),  # 影片
    ("把整个文件夹传上去", "upload_to_cloud_drive"),  # 資料夾
    ("分享链接", "upload_to_cloud_drive"),  # 連結
    ("帮我打印一下", "print_document"),  # 列印
])
def test_requests_with_the_mainlands_words_find_tools_in_taiwans(catalog: ToolIndex, query: str,
                                                                 expected: str) -> None:
    assert keys(catalog.search(query))[0] == expected


def test_kana_hangul_and_latin_text_are_not_folded() -> None:
    assert split_words("ひらがなとカタカナ") == ["ひらがなとカタカナ"]
    assert split_words("날씨를 알려 줍니다") == ["날씨를", "알려", "줍니다"]
    assert split_words("Weather forecast, café") == ["weather", "forecast", "cafe"]
    # Japanese kanji that are also Traditional characters fold with them (東, 時), kana stay.
    assert split_words("東京の時間") == ["东京の时间"]


def test_a_han_run_is_one_word_and_its_terms_are_bigrams_and_characters() -> None:
    assert split_words("向用户确认转账") == ["向用户确认转账"]
    assert terms("确认转账") == ["确认", "认转", "转账", "确", "认", "转", "账"]
    assert terms("用") == ["用"]  # a lone character is a word: no bigram, and not left out


def test_latin_words_in_cjk_text_keep_the_english_treatment() -> None:
    assert split_words("用GitHub创建issue") == ["用", "git", "hub", "创建", "issue"]
    assert terms("用 GitHub 创建 issues") == ["用", "git", "git*", "hub", "hub*", "创建", "创", "建", "issu", "issu*"]
    assert split_words("HTTPServer确认") == ["http", "server", "确认"]


def test_full_width_and_half_width_forms_are_normalised() -> None:
    assert split_words("ＧｉｔＨｕｂ") == split_words("GitHub") == ["git", "hub"]
    assert compact("ＧｉｔＨｕｂ") == "github"
    assert split_words("ｶﾚﾝﾀﾞｰ") == ["カレンダー"]
    index = ToolIndex([IndexedTool("GitHub", "GitHub", "Repositories"), IndexedTool("gitlab", "gitlab", "Hub of code")])
    assert keys(index.search("ＧｉｔＨｕｂ"))[0] == "GitHub"  # the exact name, whatever its width


def test_hangul_bigrams_meet_words_with_particles() -> None:
    assert set(terms("날씨")) <= set(terms("날씨를"))
    index = ToolIndex([IndexedTool("weather", "weather", "오늘의 날씨를 알려 줍니다"),
                       IndexedTool("notes", "notes", "메모를 저장합니다")])
    assert keys(index.search("날씨")) == ["weather"]


def test_thai_words_keep_their_vowel_and_tone_marks() -> None:
    # The marks are not \w: they used to cut "ที่อยู่" (address) into ท and อย.
    assert split_words("ที่อยู่ สภาพอากาศ") == ["ที่อยู่", "สภาพอากาศ"]
    # Bigrams of clusters (a letter with its marks), so every term starts on a letter.
    assert terms("ที่อยู่") == ["ที่อ", "อยู่"]
    assert set(terms("อากาศ")) <= set(terms("พยากรณ์อากาศ"))


@pytest.mark.parametrize("text", [
    "用 GitHub 创建 issue", "ＧｉｔＨｕｂ　で　issue を作る", "확인 후 이체합니다", "ที่อยู่ ของ ฉัน", "天 气",
    "ｶﾚﾝﾀﾞｰ に 追加",
])
def test_pieces_between_white_space_give_the_words_of_the_whole_text(text: str) -> None:
    # The index splits at white space first and looks each piece up (NFKC applied per piece).
    whole = [word for word in split_words(text) if len(word) > 1 or not word.isascii()]
    assert words(text) == whole


def test_english_text_gives_the_terms_it_gave() -> None:
    # Unchanged by the rules above (bench/search_quality.py: every MetaTool figure the same);
    # a word under four letters is its own truncation (tests/test_search_quality_sets.py).
    assert terms("getWeatherForecast: Creates invoices for customers (HTTPServer, s3)") == [
        "get", "get*", "weather", "weat*", "forecast", "fore*", "creat", "crea*", "invoic", "invo*", "for", "for*",
        "customer", "cust*", "http", "http*", "server", "serv*", "s3", "s3*"]
    assert query_terms("Could you please send an email to my boss?") == ["send", "send*", "email", "emai*", "boss",
                                                                         "boss*"]


# --- scripts: which text a model can read (bridge.search.semantic.covered_scripts) ------------------------


def test_each_letter_has_its_script_and_other_characters_none() -> None:
    assert [script_of(letter) for letter in "aßЖΩعאअก한がガー中𠀀"] == [
        "Latin", "Latin", "Cyrillic", "Greek", "Arabic", "Hebrew", "Devanagari", "Thai", "Hangul", "Hiragana",
        "Katakana", "Katakana", "Han", "Han"]
    assert [script_of(letter) for letter in "Ａｶª"] == ["Latin", "Katakana", "Latin"]  # as their NFKC forms
    assert [script_of(other) for other in "1 _。、〇"] == [""] * 6  # digits, spaces, punctuation, 〇 (a number)


def test_text_is_mostly_in_the_scripts_that_write_at_least_half_of_its_letters() -> None:
    latin = frozenset({"Latin"})
    assert mostly_in("export the table to Excel", latin) and mostly_in("export 表格 to Excel", latin)
    assert not mostly_in("确认转账", latin) and not mostly_in("把表格导出为Excel", latin)
    assert mostly_in("用Excel导出表格", latin)  # five letters each way
    assert mostly_in("2024-11-24", latin) and mostly_in("", latin)  # no letter: nothing the model cannot read
    assert not mostly_in("Погода в Москве", latin) and mostly_in("Погода в Москве", frozenset({"Latin", "Cyrillic"}))


def test_the_scripts_of_the_languages_a_model_description_names() -> None:
    # As fastembed describes its models.
    assert scripts_of_languages("Text embeddings, Unimodal (text), English, 256 input tokens truncation") == {"Latin"}
    assert scripts_of_languages("supports mixed Chinese-English input text") == {"Han", "Latin"}
    assert scripts_of_languages("Multilingual (German, English)") == {"Latin"}
    assert scripts_of_languages("Japanese") == {"Han", "Hiragana", "Katakana"}
    assert scripts_of_languages("Multilingual (~50 languages)") is None  # none named: every script
    assert scripts_of_languages("") is None
    assert scripts_of_languages("English, Hindi, Bengali, Persian, Greek") == {
        "Latin", "Devanagari", "Bengali", "Arabic", "Greek"}
    # The names script_of gives those letters.
    assert [script_of(c) for c in "हফفΑ"] == ["Devanagari", "Bengali", "Arabic", "Greek"]


# --- the query path --------------------------------------------------------------------------


def test_cjk_terms_have_no_letter_trigrams() -> None:
    # The rerank's trigrams say "near in spelling" for Latin words; a CJK or Thai term is a
    # character n-gram already.
    assert letter_trigrams("天气") == letter_trigrams("天") == letter_trigrams("날씨") == ()
    assert letter_trigrams("creat") == (" cr", "cre", "rea", "eat", "at ")


def test_english_stop_words_leave_a_mixed_request(catalog: ToolIndex) -> None:
    assert query_terms("please 确认转账") == query_terms("确认转账")
    assert keys(catalog.search("please 确认转账"))[0] == "confirm_transfer"


def test_a_character_finds_the_tools_that_hold_it_and_no_other(catalog: ToolIndex) -> None:
    assert keys(catalog.search("雨", limit=10)) == ["get_weather_forecast"]  # its "降雨概率"
    assert keys(catalog.search("길", limit=10)) == ["map_directions"]  # its "길찾기"
    # Characters no tool has, or punctuation only: nothing, and no substring fallback to names.
    assert catalog.search("龘靐") == []
    assert catalog.search("、。「」") == []
