"""Words and terms of tool text and queries, as the search index (bridge.search.index) sees them.

`split_words` cuts text into lower-case words (on separators, camelCase and acronyms),
`stem` folds plural and verb endings, `terms` gives the BM25 terms of a text (each word's
stem, and its 4-letter truncation: "fina*"; a shorter word is its own, "pdf*"; a Hebrew word
with a prefix, the terms of the word without it too). `words` and `terms` cut at white space
first and memoise each piece, which is what keeps indexing cheap.

Chinese, Japanese, Korean, Thai, Lao, Myanmar and Khmer are written without spaces between
words (Korean puts them between phrases, with particles glued on), so a run of their letters
is one "word" whose terms are its overlapping character bigrams, as Lucene's CJK analyzer
makes them, and its characters: "确认转账" is 确认 认转 转账 确 认 转 账, and meets "请用户确认" at
确认 (a run of Thai, Lao, Myanmar or Khmer: the bigrams of its character clusters). Latin
words in the same text keep the English treatment. Text that is not ASCII is folded first:
NFKC ("ＧｉｔＨｕｂ" is "GitHub", half-width "ｶﾅ" is "カナ"), accents and optional vowel
points dropped ("café" meets "cafe"), Traditional Chinese characters written Simplified
("天氣預報" meets "天气"; Taiwan's words also give the mainland's: "列印" "打印"), case-folded;
the vowel signs of Indic scripts stay in their words ("हिन्दी" is one word).

`script_of` and `mostly_in` say which scripts text is written in: a sentence-embedding model
reads only those of the languages it was trained on (bridge.search.semantic.covered_scripts).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Container, Iterable, Sequence
from functools import cache, lru_cache
from itertools import chain

__all__ = ["split_words", "stem", "tokenize", "terms", "words", "word_terms", "bigrams", "compact", "letter_trigrams",
           "distinct_trigrams", "query_words", "query_terms", "script_of", "mostly_in", "scripts_of_languages",
           "LANGUAGE_SCRIPTS", "QUERY_STOP_WORDS", "QUERY_STOP_CHARACTERS", "MIN_STEM"]

# A word: an optionally capitalised run of lower-case letters and digits, or a capital run
# that leaves the capital of the next word alone ("HTTPServer" -> HTTP, Server). Anything
# else separates words: "_ - . :" and spaces alike. Digits stay with the letters before them
# so "s3", "v2", "base64" survive. Letters outside ASCII count (upper-case: Latin-1 only).
_UPPER = "A-ZÀ-ÖØ-Þ"
_WORD = re.compile(rf"[{_UPPER}]?[^\W_{_UPPER}]+|[{_UPPER}0-9]+(?![^\W\d_{_UPPER}])")
_LETTERS_AND_DIGITS = re.compile(r"[^\W_]+")


def _class_of(code_points: Iterable[int]) -> str:
    """A regex character class's body holding these code points (ascending), as ranges."""
    ranges: list[list[int]] = []
    for point in code_points:
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    return "".join(chr(first) if first == last else f"{chr(first)}-{chr(last)}" for first, last in ranges)


def _where(test: Callable[[str], bool], *blocks: tuple[int, int]) -> list[int]:
    return [point for first, end in blocks for point in range(first, end) if test(chr(point))]


def _is_mark(character: str) -> bool:
    return unicodedata.category(character)[0] == "M"


# Letters of the scripts written without spaces. Han, kana and Hangul in one class: Japanese
# mixes the first three in a word ("予定を追加"). Ideographic punctuation (、。「」・) is not in
# it and separates runs, as other punctuation does.
_CJK = ("\u1100-\u11ff"  # Hangul jamo
        "\u3005-\u3007"  # 々 〆 〇
        "\u3041-\u3096\u3099-\u309f"  # hiragana
        "\u30a1-\u30fa\u30fc-\u30ff\u31f0-\u31ff"  # katakana, ー
        "\u3131-\u318e"  # Hangul compatibility jamo
        "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f"  # Han
        "\ua960-\ua97f\uac00-\ud7a3\ud7b0-\ud7ff")  # Hangul syllables
# Thai, Lao, Myanmar and Khmer: their letters with their vowel and tone marks (marks are not
# \w: without them a word would break at every one).
_SOUTHEAST_BLOCKS = ((0x0E00, 0x0F00), (0x1000, 0x10A0), (0x1780, 0x1800))
_SOUTHEAST = _class_of(_where(lambda c: unicodedata.category(c)[0] in "LM", *_SOUTHEAST_BLOCKS))
_SPACELESS = _CJK + _SOUTHEAST
# Combining marks (vowel signs, viramas, accents) are a word's letters, not what separates
# words: without them "हिन्दी" would be three one-letter words. Those that only accent a letter,
# or point a vowel readers leave out, are folded away first (see _fold): Latin, Greek and
# Cyrillic accents, Hebrew points, Arabic vowel marks. The rest are the vowels and viramas of
# the Indic scripts and their kin, kept.
_FOLDED_MARK_BLOCKS = ((0x0300, 0x0370), (0x0483, 0x048A), (0x0591, 0x05C8), (0x0610, 0x061B), (0x064B, 0x0660),
                       (0x0670, 0x0671), (0x06D6, 0x06EE), (0x1AB0, 0x1B00), (0x1DC0, 0x1E00), (0x20D0, 0x2100),
                       (0xFE20, 0xFE30))
# Folded away too: the Arabic tatweel that stretches a word, soft hyphens, the zero-width
# (non-)joiners written inside Persian and Indic words, variation selectors.
_DROPPED = re.compile(f"[{_class_of(_where(_is_mark, *_FOLDED_MARK_BLOCKS))}\u0640\u00ad\u200c\u200d\ufe00-\ufe0f]")
# Letters folded as accents are (_fold): a letter with a stroke is typed without it ("đ" as
# "d" in Vietnamese, "ı" as "i" in Turkish), and Arabic search folds alef maqsura to yeh, ta
# marbuta to heh, and Persian's yeh and keheh to Arabic's (hamza-seated alefs lose their
# hamza as a mark).
_FOLDED_LETTERS = {"đ": "d", "Đ": "D", "ð": "d", "Ð": "D", "ł": "l", "Ł": "L", "ø": "o", "Ø": "O", "ı": "i", "ħ": "h",
                   "Ħ": "H", "ŧ": "t", "Ŧ": "T", "æ": "ae", "Æ": "AE", "œ": "oe", "Œ": "OE", "ى": "ي", "ة": "ه",
                   "ی": "ي", "ک": "ك"}
_FOLDED_LETTER = re.compile(f"[{''.join(_FOLDED_LETTERS)}]")  # finds the few faster than translate() walks all
_MARKS = _class_of(sorted(set(_where(_is_mark, (0x0300, 0x2000), (0xA800, 0xAB00)))
                          - set(_where(_is_mark, *_FOLDED_MARK_BLOCKS, *_SOUTHEAST_BLOCKS))))
# What _WORD and _LETTERS_AND_DIGITS find in text that is not ASCII: a word of the scripts
# written with spaces (marks included), or a run of one of the spaceless ones. ASCII text,
# which holds none of them, keeps the shorter patterns (which run faster).
_SPACED = rf"(?:[^\W_{_UPPER}{_SPACELESS}]|[{_MARKS}])"
_WORD_ANY = re.compile(rf"[{_UPPER}]?{_SPACED}+|[{_UPPER}0-9]+(?![^\W\d_{_UPPER}{_SPACELESS}])"
                       rf"|[{_CJK}]+|[{_SOUTHEAST}]+")
_LETTERS_AND_DIGITS_ANY = re.compile(rf"(?:[^\W_{_SPACELESS}]|[{_MARKS}])+|[{_CJK}]+|[{_SOUTHEAST}]+")
_IS_CJK = re.compile(f"[{_CJK}]")
_IS_SOUTHEAST = re.compile(f"[{_SOUTHEAST}]")
_IS_SPACELESS = re.compile(f"[{_SPACELESS}]")
_IS_KANA = re.compile("[\u3041-\u3096\u30a1-\u30fa]")
# A character cluster of Thai, Lao, Myanmar or Khmer: the vowels written before their
# consonant (Thai เ แ โ ใ ไ, Lao ເ ແ ໂ ໃ ໄ), a letter, the marks above and below it and the
# consonants stacked under it (after a Myanmar virama or Khmer coeng); or a stray mark alone.
_SOUTHEAST_MARKS = _class_of(_where(_is_mark, *_SOUTHEAST_BLOCKS))
_CLUSTER = re.compile(f"[\u0e40-\u0e44\u0ec0-\u0ec4]*[^{_SOUTHEAST_MARKS}](?:[\u1039\u17d2].|[{_SOUTHEAST_MARKS}])*|.",
                      re.S)
MIN_STEM = 3
_VOWEL = re.compile(r"[aeiouy]")
# Besides its stem, each word is indexed by its first four letters, marked "*": "financial"
# and "finance" meet at "fina*", which no suffix rule joins. A shorter word is its own
# truncation ("pdf*", "bar*"), so it counts as much as a longer word does with its two terms:
# else "bar" in "draw a bar chart" weighs half of "draw", and "map", "pdf", "sql", "csv" or
# "git" half of any word of four letters.
_TRUNCATE = 4


def split_words(text: str) -> list[str]:
    """Lower-case words of `text`, split on anything but letters/digits and on camelCase;
    a run of Han, kana, Hangul, Thai, Lao, Myanmar or Khmer is one word, apart from the Latin
    words around it. Text that is not ASCII is folded first (see _fold). Text in Traditional
    Chinese characters also has the mainland's word for each word Taiwan writes differently
    (see _mainland_words), after its own."""
    if text.isascii():
        return [word.lower() for word in _WORD.findall(text)]
    folded, taiwans = _fold(text)
    found = [word.casefold() for word in _WORD_ANY.findall(folded)]
    return found + _mainland_words(folded) if taiwans else found


def _fold(text: str) -> tuple[str, bool]:
    """`text` NFKC-normalised ("ＧｉｔＨｕｂ" is "GitHub", "ｶﾅ" "カナ"), less its folded marks and
    invisible joiners (_DROPPED), its stroked and variant letters written plain (_FOLDED_LETTERS),
    its Traditional Chinese characters Simplified (_simplified): "Café" is "Cafe", "Đặt" "Dat",
    "مَلَف" "ملف", "天氣" "天气". split_words then case-folds each word ("Straße" and "STRASSE" meet).
    And whether it is Chinese as Taiwan writes it: Traditional characters were folded, and it
    has no kana (which would make it Japanese)."""
    folded = unicodedata.normalize("NFC", _DROPPED.sub("", unicodedata.normalize("NFKD", text)))
    folded = _FOLDED_LETTER.sub(lambda letter: _FOLDED_LETTERS[letter[0]], folded)
    # Any CJK text, not Han alone: the tables map nothing but Han, and one more regex class over
    # the ideographs' blocks would be compiled at every import, a cost the lazy tables avoid.
    if not _IS_CJK.search(folded):
        return folded, False
    simplified = folded.translate(_simplified())
    return simplified, simplified != folded and not _IS_KANA.search(folded)


@cache
def _simplified() -> dict[int, int]:
    """str.translate's table from each Traditional Chinese character to its Simplified form,
    character for character, as OpenCC's character table gives them (bridge/search/data/
    traditional_to_simplified.txt; no phrases): a page in Taiwan or Hong Kong describes "天氣預報",
    a user asks "天气". Only Han characters are in it: kana, Hangul and every other letter stay as
    written. Japanese kanji it holds ("東", "時") are folded too, in tools and requests alike: a
    request in kanji alone ("営業時間") cannot be told from Chinese, and must still meet the
    description's kanji among kana. Read at the first text in Han, kana or Hangul, not at import."""
    pairs = "".join(_data_lines("traditional_to_simplified.txt"))  # Traditional, Simplified, ...
    return str.maketrans(pairs[0::2], pairs[1::2])


def _data_lines(name: str) -> list[str]:
    """The lines of bridge/search/data/`name`, less its comments."""
    from pathlib import Path

    lines = Path(__file__).with_name("data").joinpath(name).read_text("utf-8").splitlines()
    return [line for line in lines if not line.startswith("#")]


@cache
def _taiwan_words() -> tuple[dict[str, str], dict[str, tuple[int, ...]]]:
    """Each word Taiwan writes differently from the mainland -> the mainland's ("列印" -> "打印",
    "软体" -> "软件", "使用者" -> "用户"), as OpenCC's TWPhrasesRev gives them, in Simplified
    characters (bridge/search/data/taiwan_phrases.txt); and for each first character of those words,
    their lengths, longest first. Read at the first text in Traditional characters."""
    words = dict(line.split("\t") for line in _data_lines("taiwan_phrases.txt"))
    lengths: dict[str, set[int]] = {}
    for word in words:
        lengths.setdefault(word[0], set()).add(len(word))
    return words, {first: tuple(sorted(found, reverse=True)) for first, found in lengths.items()}


def _mainland_words(text: str) -> list[str]:
    """The mainland's words for the words of `text` (Taiwan's, folded to Simplified characters)
    that Taiwan writes differently, found longest first from left to right: a page in Taiwan
    describes "列印檔案", and an agent asking "打印文件" finds it. The mainland sometimes writes
    Taiwan's word too ("查询" beside "查找"): the text keeps its own words as well."""
    words, lengths = _taiwan_words()
    found, at = [], 0
    while at < len(text):
        for length in lengths.get(text[at], ()):
            mainland = words.get(text[at:at + length])
            if mainland is not None:
                found.append(mainland)
                at += length
                break
        else:
            at += 1
    return found


def _kept(word: str) -> bool:
    """Whether a word is indexed: one-letter words are not, but a lone Han character (or
    kana, or Hangul syllable) is a word."""
    return len(word) > 1 or _IS_CJK.match(word) is not None


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Fold plural and verb endings so "files", "filed", "filing" and "file" meet.

    Rules, each kept only if at least three letters remain: -ies/-ied -> -i; a final -s
    (not -ss, -us, -is); then -ing/-ed if a vowel remains ("string" stays), undoubling
    "runn" -> "run" except l, s, z; then a final -e (not -ee), which makes "creates",
    "created", "creating" and "create" all "creat"; last, a final -y after a consonant
    becomes -i, as in Porter's stemmer, so "query", "queries" and "queried" meet at "queri",
    and "movie" (its -e dropped) meets "movies" at "movi". A word in Cyrillic letters gets
    _cyrillic_stem instead, one in Arabic letters _arabic_stem, one in Devanagari _hindi_stem.
    """
    if "\u0900" <= word[:1] <= "\u097f":
        return _hindi_stem(word)
    if len(word) <= MIN_STEM or not word.isalpha():
        return word
    if "\u0400" <= word[0] <= "\u04ff":
        return _cyrillic_stem(word)
    if "\u0600" <= word[0] <= "\u06ff":
        return _arabic_stem(word)
    if word.endswith(("ies", "ied")) and len(word) > MIN_STEM + 2:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith(("ing", "ed")) and not word.endswith("eed"):
        base = word[:-3] if word.endswith("ing") else word[:-2]
        if len(base) >= MIN_STEM and _VOWEL.search(base):
            if len(base) > MIN_STEM and base[-1] == base[-2] and base[-1] not in "aeiouylsz":
                base = base[:-1]
            word = base
    if word.endswith("e") and not word.endswith("ee") and len(word) > MIN_STEM:
        word = word[:-1]
    if word.endswith("y") and len(word) > MIN_STEM and word[-2] not in "aeiouy":
        word = word[:-1] + "i"
    return word


# The endings Cyrillic words take off, as folded (see _fold: "й" is "и", "ї" "і", "ё" "е"):
# of Russian and Ukrainian nouns and adjectives by case and number, as Savoy's light stemmer
# for Russian takes them off; of the verb forms requests and descriptions say the same thing
# with, the imperative of a request ("добавь", "найдите", "создай", Ukrainian "оплати") and
# the infinitive of a description ("добавить", "создать", "оплатити"), but not the present or
# past tense, whose endings also end nouns ("отчет", "файл"); Bulgarian's article ("хотелът").
_CYRILLIC_ENDING_LIST = """
    а я о е у ю ы и і ь ом ем ам ям ах ях ов ев ів еи ои ыи ии іи оі ая яя ое ее ые ие ия ию ье ья
    ью ую юю ою ею им ым их ых ім іх ми ами ями ого его ому ему ыми ими іми ові еві иям иях оям оях
    иями оями ьями
    ать ять ить еть уть ыть ити іти аться яться иться еться атися ятися итися аи яи ите ьте іть
    аите яите оите еите
    ът ят""".split()
_CYRILLIC_ENDINGS = tuple((length, frozenset(ending for ending in _CYRILLIC_ENDING_LIST if len(ending) == length))
                          for length in sorted(set(map(len, _CYRILLIC_ENDING_LIST)), reverse=True))


def _cyrillic_stem(word: str) -> str:
    """A light stemmer for words in Cyrillic letters (Russian, Ukrainian, and the endings
    Bulgarian and Serbian share with them): the longest of _CYRILLIC_ENDING_LIST that leaves
    MIN_STEM letters, then a soft sign: "товара", "товаров" and "товар" are "товар", "добавь"
    and "добавить" "добав", "цена" and "цены" "цен"."""
    for length, endings in _CYRILLIC_ENDINGS:
        if len(word) - length >= MIN_STEM and word[-length:] in endings:
            word = word[:-length]
            break
    return word[:-1] if word.endswith("ь") and len(word) > MIN_STEM else word


# Arabic glues "and", the article and prepositions before a word and pronouns after it
# ("طلبي" my order, "الطلب" the order): Larkey's light10 stemmer takes them off.
_ARABIC_ARTICLES = ("وال", "بال", "كال", "فال", "لل", "ال")
_ARABIC_SUFFIXES = ("ها", "ان", "ات", "ون", "ين", "يه", "ه", "ي")


def _arabic_stem(word: str) -> str:
    """light10 (Larkey, Ballesteros and Connell, 2002) on a folded word (see _fold): a leading
    "و" when three letters remain, one article when two remain, then each suffix in turn
    when two remain: "الرصيد" and "رصيدي" are "رصيد", "الصلاة" and "صلاة" "صلا"."""
    if len(word) > 3 and word.startswith("و"):
        word = word[1:]
    for article in _ARABIC_ARTICLES:
        if word.startswith(article) and len(word) - len(article) >= 2:
            word = word[len(article):]
            break
    for suffix in _ARABIC_SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 2:
            word = word[:-len(suffix)]
    return word


# Hindi endings (gender, number, case, tense), longest first, as Ramanathan and Rao's light
# stemmer lists them (chandrabindu written as anusvara: see _hindi_stem).
_HINDI_SUFFIXES = tuple(sorted({suffix.replace("\u0901", "\u0902") for suffix in """
    ाएंगी ाएंगे ाऊंगी ाऊंगा ाइयाँ ाइयों ाइयां
    ाएगी ाएगा ाओगी ाओगे एंगी ेंगी एंगे ेंगे ूंगी ूंगा ातीं नाओं नाएं ताओं ताएं ियाँ ियों ियां
    ाकर ाइए ाईं ाया ेगी ेगा ोगी ोगे ाने ाना ाते ाती ाता तीं ाओं ाएं ुओं ुएं ुआं
    कर ाओ िए ाई ाए ने नी ना ते ीं ती ता ाँ ां ों ें
    ो े ू ु ी ि ा""".split()}, key=len, reverse=True))
# A half न or म before a consonant is written as an anusvara too ("हिन्दी" and "हिंदी").
_HALF_NASAL = re.compile("[\u0928\u092e]\u094d(?=[\u0915-\u0939])")


def _hindi_stem(word: str) -> str:
    """Ramanathan and Rao's light stemmer for Hindi: the longest ending that leaves two
    letters or more, after the spellings readers take for the same are made one (nukta
    dropped, chandrabindu and a half nasal written as anusvara): "भेजो", "भेजें" and "भेजना"
    are "भेज"."""
    word = _HALF_NASAL.sub("\u0902", word.replace("\u093c", "").replace("\u0901", "\u0902"))
    for suffix in _HINDI_SUFFIXES:
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            return word[:-len(suffix)]
    return word


# Words a request is phrased with rather than about, left out of a query's terms (never out
# of a tool's: a query-side list only). Snowball's English stop list (as NLTK ships it, with
# its "can", "will", "just", "now", "don" and friends), then politeness and the modal verbs
# of asking ("please", "thanks", "hello", "would", "could", "might", ...), which tool names
# hold now and then ("about_me", "do_not_disturb", "will_writer") and which pull such tools
# into long polite requests. "help", "want", "need" and "like" are not in it: they name
# things too ("help_center", "like_post"; measured: -0.3 points R@5 on MetaTool's dev half
# with them, +0.8 without). A query made of nothing but these keeps them all.
QUERY_STOP_WORDS = frozenset("""
i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
her hers herself it its itself they them their theirs themselves what which who whom this that
these those am is are was were be been being have has had having do does did doing a an the and
but if or because as until while of at by for with about against between into through during
before after above below to from up down in out on off over under again further then once here
there when where why how all any both each few more most other some such no nor not only own
same so than too very can will just don should now ll re ve ain aren couldn didn doesn hadn hasn
haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn
please kindly thanks thank hello hi hey would could might may must shall
""".split())


# Chinese function characters (particles, pronouns, prepositions, the copula, adverbs, a measure
# word, "please"), left out of a query's terms as single characters, as QUERY_STOP_WORDS leaves
# out English words: a request such as "找一下便宜的蓝牙耳机" matches nearly every description at
# "的", and the tools that brings outweigh what its other words find (the semantic tier fuses
# them). The pairs holding them stay ("我的", "的蓝").
QUERY_STOP_CHARACTERS = frozenset("的地得了着过吗呢吧啊呀嘛我你您他她它们这那在和与及或"
                                  "把被给让对从向跟是有也都就还很又再才只个请")


def tokenize(text: str) -> list[str]:
    """The words of `text` as the index sees them: split, lower-case, stemmed, one-letter
    words dropped (see _kept)."""
    return [stem(word) for word in split_words(text) if _kept(word)]


@lru_cache(maxsize=1 << 16)
def word_terms(word: str) -> tuple[str, ...]:
    """The BM25 terms of one lower-case word: its stem and its truncation (a Hebrew word with a
    prefix: and those of the word without it); for a run of Han, kana, Hangul, Thai, Lao,
    Myanmar or Khmer, its character n-grams (see _spaceless_terms)."""
    if word >= "\u0e01" and (found := _spaceless_terms(word)):  # (those scripts are from U+0E01 on)
        return found
    stemmed = stem(word)
    # An Arabic or Hindi word's truncation is its stem's: its own would start with the article,
    # or end in a vowel sign ("भेजो", "भेजें"). (From U+0600 on, other words are their own stem.)
    # A Cyrillic word's is its own: forms the light stemmer leaves apart ("печать" "печ",
    # "печати" "печат") still meet there.
    found = (stemmed, (stemmed if word[0] >= "\u0600" else word)[:_TRUNCATE] + "*")
    # A Hebrew word with a prefix is indexed as written and without it, not without it only:
    # a prefix's letters also start words ("מסעדה", "לקוח"), which cut would miss "המסעדה".
    if "\u05d0" <= word[0] <= "\u05ea" and (bare := _hebrew_bare(word)):
        return found + (bare, bare[:_TRUNCATE] + "*")
    return found


# Hebrew writes "and", "the", "in", "to", "from", "that" and "as" as one letter glued to the
# next word, and two of them together ("וה" and the, "שב" that in, "כש" when).
_HEBREW_PREFIX_LETTERS = frozenset("ו ה ב ל מ ש כ".split())
_HEBREW_PREFIX_PAIRS = frozenset("וה וב ול ומ וש וכ שה שב של שמ כש מה".split())


def _hebrew_bare(word: str) -> str:
    """`word` less its prefix, two letters or one, when MIN_STEM letters remain ("בקובץ" and
    "שהקובץ" are "קובץ", "והצג" "הצג"); "" when none comes off."""
    if word[:2] in _HEBREW_PREFIX_PAIRS and len(word) >= 2 + MIN_STEM:
        return word[2:]
    if word[0] in _HEBREW_PREFIX_LETTERS and len(word) >= 1 + MIN_STEM:
        return word[1:]
    return ""


def _spaceless_terms(word: str) -> tuple[str, ...]:
    """The terms of a run of Han, kana or Hangul: its bigrams, then its characters (a Han
    character is often a word itself: "雨" of "下雨" and "降雨", "日" of "日语" and "日文");
    of a run of Thai, Lao, Myanmar or Khmer: the bigrams of its character clusters (a
    letter with its marks is not a word, as a Latin letter is not). () for any other word."""
    if _IS_CJK.match(word):
        return bigrams(word) + tuple(word) if len(word) > 1 else (word,)
    if _IS_SOUTHEAST.match(word):
        return bigrams(_CLUSTER.findall(word))
    return ()


def bigrams(characters: Sequence[str]) -> tuple[str, ...]:
    """Each character with the next, overlapping: "天气预报" -> 天气 气预 预报. Who reads
    Chinese knows which two make a word; the index need not: the wrong pairs (气预) are
    rare and cost little, the right ones are there. One character alone is itself."""
    if len(characters) < 2:
        return ("".join(characters),)
    return tuple(first + second for first, second in zip(characters, characters[1:]))


def compact(text: str) -> str:
    """"user_confirm", "userConfirm" and "User Confirm" all become "userconfirm"."""
    return "".join(letters_and_digits(text)).casefold()


def letters_and_digits(text: str) -> list[str]:
    """The runs of letters and digits in `text`, as written (folded: see _fold), a run of
    Han, kana, Hangul, Thai, Lao, Myanmar or Khmer apart from the letters around it."""
    if text.isascii():
        return _LETTERS_AND_DIGITS.findall(text)
    return _LETTERS_AND_DIGITS_ANY.findall(_fold(text)[0])


@lru_cache(maxsize=1 << 16)
def letter_trigrams(term: str) -> tuple[str, ...]:
    """The letter trigrams of a stem padded with a space each side: "creat" -> " cr", "cre",
    "rea", "eat", "at "; none for a truncation ("crea*"), which its stem already covers, nor
    for a term of a spaceless script, a character n-gram already."""
    if term.endswith("*") or term[:1] >= "\u0e01" and _IS_SPACELESS.match(term):
        return ()
    padded = f" {term} "
    return tuple(padded[start:start + 3] for start in range(len(term)))


@lru_cache(maxsize=1 << 16)
def distinct_trigrams(term: str) -> tuple[str, ...]:
    """letter_trigrams(term), each once ("10000" has "000" twice)."""
    return tuple(dict.fromkeys(letter_trigrams(term)))


# Text is cut at white space first, which str.split does ~7 times faster than _WORD finds
# words (no word spans white space, so the words are the same), and what the index makes
# of each piece as written ("Exports", "spreadsheet.", "getWeather") is looked up: the same
# few thousand pieces make up most catalogs and most queries.
_PIECES_REMEMBERED = 1 << 16


class _PerPiece(dict[str, tuple[str, ...]]):
    """piece of text -> `derive(its words, split, lower-cased, one-letter words left out)`,
    computed on first lookup (`memo[piece]`); all forgotten once _PIECES_REMEMBERED are held."""

    def __init__(self, derive: Callable[[list[str]], tuple[str, ...]]) -> None:
        super().__init__()
        self._derive = derive

    def __missing__(self, piece: str) -> tuple[str, ...]:
        if len(self) >= _PIECES_REMEMBERED:
            self.clear()
        found = self[piece] = self._derive([word for word in split_words(piece) if _kept(word)])
        return found


_WORDS_IN = _PerPiece(tuple)
_TERMS_IN = _PerPiece(lambda found: tuple(chain.from_iterable(map(word_terms, found))))


def words(text: str) -> list[str]:
    """The words of `text`, lower-cased, one-letter words dropped: split_words, memoised."""
    return list(chain.from_iterable(map(_WORDS_IN.__getitem__, text.split())))


def terms(text: str) -> list[str]:
    """The BM25 terms of `text`: each word's stem, then its truncation."""
    return list(chain.from_iterable(map(_TERMS_IN.__getitem__, text.split())))


# A file path in a request ("save it to /root/markdown/report.md", "~/notes/todo.txt",
# "C:\\Users\\me\\a.docx") is a value a tool is given, not what the tool does: it is read as "file"
# and its extension ("file md"), so its folders and name ("markdown", "report") do not pull in the
# tools that do those things. A URL is left as written (its host often names the service), and so
# is "and/or" or a lone "/login": a path here starts at a separator and has two parts or more.
_PATH = re.compile(r"(?<![\w/\\])(?:~|[A-Za-z]:)?[/\\][\w.~-]+(?:[/\\][\w.~-]*)+")
_EXTENSION = re.compile(r"\.([^\W_]{1,5})[.,;:!?]*$")


def _as_file(path: re.Match[str]) -> str:
    extension = _EXTENSION.search(path[0])
    return f" file {extension[1]} " if extension else " file "


def query_words(text: str, stop_words: frozenset[str] = QUERY_STOP_WORDS) -> list[str]:
    """The words of a query: words() less `stop_words`, or all of them when nothing else is
    left; each file path in it read as "file" and its extension."""
    if "/" in text or "\\" in text:
        text = _PATH.sub(_as_file, text)
    found = words(text)
    return [word for word in found if word not in stop_words] or found


def query_terms(text: str, stop_words: frozenset[str] = QUERY_STOP_WORDS,
                stop_characters: frozenset[str] = QUERY_STOP_CHARACTERS) -> list[str]:
    """The BM25 terms of a query: terms() of its words (query_words), less `stop_characters`
    unless nothing else is left."""
    found = list(chain.from_iterable(map(word_terms, query_words(text, stop_words))))
    return [term for term in found if term not in stop_characters] or found


def piece_terms(piece: str) -> tuple[str, ...]:
    """terms() of one piece of text without white space, memoised."""
    return _TERMS_IN[piece]


# --- scripts ---------------------------------------------------------------------------------

# The first word of a letter's Unicode name is its script ("LATIN SMALL LETTER A", "CYRILLIC
# ...", "THAI CHARACTER ...", "HANGUL SYLLABLE ...") but for these.
_SCRIPT_NAMED = {"CJK": "Han", "IDEOGRAPHIC": "Han", "KATAKANA-HIRAGANA": "Katakana"}


@lru_cache(maxsize=1 << 14)
def script_of(character: str) -> str:
    """The script of a letter, as Unicode names it ("Latin", "Han", "Hiragana", "Hangul", "Thai",
    "Cyrillic", "Devanagari", ...); "" for anything that is not a letter. A full-width or
    half-width form is the script of its NFKC form ("Ａ" Latin, "ｶ" Katakana)."""
    if character.isascii():
        return "Latin" if character.isalpha() else ""
    if not character.isalpha():
        return ""
    normal = unicodedata.normalize("NFKC", character)
    if normal != character:
        return next(filter(None, map(script_of, normal)), "") if normal.isalpha() else ""
    first = unicodedata.name(character, "").partition(" ")[0]
    return _SCRIPT_NAMED.get(first, first.capitalize())


def mostly_in(text: str, scripts: Container[str]) -> bool:
    """Whether at least half of the letters of `text` are in `scripts` (see script_of); text
    without letters is."""
    inside = outside = 0
    for character in text:
        script = script_of(character)
        if script:
            if script in scripts:
                inside += 1
            else:
                outside += 1
    return inside >= outside


# The scripts each language is written in, for the languages models say they were trained on.
LANGUAGE_SCRIPTS = {
    "english": {"Latin"}, "german": {"Latin"}, "spanish": {"Latin"}, "french": {"Latin"}, "italian": {"Latin"},
    "portuguese": {"Latin"}, "dutch": {"Latin"}, "polish": {"Latin"}, "turkish": {"Latin"}, "vietnamese": {"Latin"},
    "indonesian": {"Latin"}, "czech": {"Latin"}, "swedish": {"Latin"}, "romanian": {"Latin"},
    "russian": {"Cyrillic"}, "ukrainian": {"Cyrillic"}, "bulgarian": {"Cyrillic"}, "greek": {"Greek"},
    "arabic": {"Arabic"}, "persian": {"Arabic"}, "farsi": {"Arabic"}, "urdu": {"Arabic"}, "hebrew": {"Hebrew"},
    "hindi": {"Devanagari"}, "marathi": {"Devanagari"}, "nepali": {"Devanagari"}, "bengali": {"Bengali"},
    "tamil": {"Tamil"}, "telugu": {"Telugu"}, "kannada": {"Kannada"}, "malayalam": {"Malayalam"},
    "gujarati": {"Gujarati"}, "punjabi": {"Gurmukhi"}, "thai": {"Thai"}, "lao": {"Lao"}, "khmer": {"Khmer"},
    "burmese": {"Myanmar"}, "korean": {"Hangul"}, "chinese": {"Han"}, "japanese": {"Han", "Hiragana", "Katakana"},
}
_NAMED_WORD = re.compile(r"[a-z]+")


def scripts_of_languages(description: str) -> frozenset[str] | None:
    """The scripts of the languages `description` names ("English", "Multilingual (German,
    English)", "mixed Chinese-English"); None when it names none of LANGUAGE_SCRIPTS
    ("Multilingual (~50 languages)": every script)."""
    named = set(_NAMED_WORD.findall(description.lower())) & LANGUAGE_SCRIPTS.keys()
    return frozenset().union(*(LANGUAGE_SCRIPTS[language] for language in named)) if named else None
