"""Tool search in the scripts beyond CJK and Thai: Indic scripts (whose vowel signs are marks,
not letters), Arabic and Persian (optional vowel marks, clitics glued to words), Hebrew
(prefixes glued to words), Cyrillic (inflected) and Greek, Latin with accents (often typed
without) and compound words (German, Dutch, Swedish), and Lao, Khmer and Myanmar (no spaces).

The catalog is bench/data/world_tools.json (bench/search_quality.py --multilingual scores all
of its requests); these tests pin the tokenizer rules behind it and the catalog as a whole. (One
search through a real bridge: tests/interaction/test_search_across_languages.py.)
"""

from __future__ import annotations

import math

import pytest
from search_support import WORLD_ENTRIES, indexed

from bridge.search.index import IndexedTool, ToolIndex
from bridge.search.tokenizer import MIN_STEM, compact, split_words, stem, terms


@pytest.fixture(scope="module")
def catalog() -> ToolIndex:
    return ToolIndex(map(indexed, WORLD_ENTRIES))


def top(index: ToolIndex, query: str) -> str | None:
    hits = index.search(query)
    return hits[0].key if hits else None


# --- words -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("हिन्दी में अनुवाद", ["हिन्दी", "में", "अनुवाद"]),  # Devanagari: vowel signs and virama inside words
    ("ফাইল আপলোড করুন", ["ফাইল", "আপলোড", "করুন"]),  # Bengali
    ("கோப்பை பதிவேற்று", ["கோப்பை", "பதிவேற்று"]),  # Tamil
    ("ఫైల్ అప్‌లోడ్", ["ఫైల్", "అప్లోడ్"]),  # Telugu, a zero-width non-joiner inside a word
])
def test_an_indic_word_keeps_its_vowel_signs(text: str, expected: list[str]) -> None:
    assert split_words(text) == expected


@pytest.mark.parametrize(("written", "typed"), [
    ("Café réservé", "cafe reserve"),
    ("Größe ändern", "GROSSE andern"),  # ß case-folds to ss, umlauts lose their dots
    ("Đặt đồ ăn, hủy đơn hàng", "dat do an huy don hang"),  # Vietnamese, đ as d
    ("yarınki hava", "yarinki hava"),  # Turkish dotless ı
    ("ёлка", "елка"),
    ("αρχείο", "ΑΡΧΕΙΟ"),
    ("مَلَفٌ", "ملف"),  # Arabic vowel marks are optional
    ("آخِر", "اخر"),  # an alef's madda or hamza too
])
def test_accents_and_optional_vowel_marks_are_folded_away(written: str, typed: str) -> None:
    assert terms(written) == terms(typed)


def test_arabic_clitics_are_taken_off_as_a_light_stemmer_does() -> None:
    # "my balance" and "the balance"; "the prayer" and "prayer" (ta marbuta); "and the order".
    assert terms("رصيدي")[0] == terms("الرصيد")[0] == terms("رصيد")[0]
    assert terms("الصلاة")[0] == terms("صلاة")[0]
    assert terms("والطلب")[0] == terms("طلب")[0]
    assert terms("الطلب")[1] == "طلب*"  # the truncation of the stem, not of "الط..."
    assert terms("کتاب یک")[0] == terms("كتاب")[0]  # Persian keheh and yeh meet Arabic's


def test_hindi_endings_are_taken_off_and_spellings_of_one_word_meet() -> None:
    # "send" as an order, politely, and as the infinitive; "do" likewise.
    assert terms("भेजो")[0] == terms("भेजें")[0] == terms("भेजना")[0] == "भेज"
    assert terms("करो")[0] == terms("करें")[0] == terms("करना")[0]
    assert terms("हिन्दी") == terms("हिंदी")  # a half nasal or an anusvara
    assert terms("ज़रूरी") == terms("जरूरी")  # the nukta is often left out
    assert terms("अनुवाद")[0] == "अनुवाद"  # no ending: the word itself
    assert terms("भेजो")[1] == "भेज*"  # the truncation of the stem, not of "भेजो"


def test_persian_words_written_with_a_zero_width_non_joiner_are_one_word() -> None:
    assert split_words("می‌خواهم هتل‌ها") == split_words("میخواهم هتلها")
    assert len(split_words("می‌خواهم")) == 1
    assert terms("هتل‌ها")[0] == terms("هتل")[0]  # the plural suffix goes too


@pytest.mark.parametrize("forms", [
    ("товар", "товара", "товаров", "товаром"),  # Russian cases and numbers: a noun
    ("цена", "цены", "цене", "ценой"),  # ... whose truncations differ ("цена*", "цены*")
    ("новый", "новая", "новое", "новыми"),  # an adjective
    ("операция", "операции", "операций", "операциям"),
    ("добавь", "добавьте", "добавить"),  # the imperative of a request, the infinitive of a description
    ("создай", "создайте", "создать"),
    ("записаться", "записать", "запись"),
    ("оплати", "оплатіть", "оплатити", "оплата"),  # Ukrainian
    ("квитки", "квитків", "квитка"),
    ("хотел", "хотелът", "хотели", "хотелите"),  # Bulgarian, with its article
    ("кућа", "куће", "кућу"),  # Serbian
])
def test_inflected_cyrillic_words_meet_at_their_stem(forms: tuple[str, ...]) -> None:
    assert len({terms(form)[0] for form in forms}) == 1


def test_a_cyrillic_word_keeps_its_own_truncation() -> None:
    # A stem may end before the fourth letter ("цен"): the truncation stays the word's, so two
    # forms the stemmer tells apart ("печать", "печати") still meet there.
    assert terms("товаров") == ["товар", "това*"]
    assert terms("печать")[1] == terms("печати")[1] == "печа*"


@pytest.mark.parametrize("word", ["газ", "дня", "мама", "сеть", "путь", "дата", "ёлки", "имя", "кофе", "пиво", "ток",
                                  "її", "ще", "хотелът", "ја", "њих", "шта", "бит"])
def test_a_short_cyrillic_word_keeps_three_letters_and_is_cut_only_at_its_end(word: str) -> None:
    folded = split_words(word)[0]
    stemmed = stem(folded)
    assert folded.startswith(stemmed)
    assert len(stemmed) >= min(len(folded), MIN_STEM)


@pytest.mark.parametrize(("prefixed", "bare"), [
    ("בקובץ", "קובץ"),  # in the file
    ("הקובץ", "קובץ"),  # the file
    ("שהקובץ", "קובץ"),  # that the file
    ("והצג", "הצג"),  # and show
    ("לשלוח", "שלוח"),  # to send
    ("בחשבון", "החשבון"),  # in the account, the account
    ("המסעדה", "מסעדה"),  # the restaurant, a word starting with a prefix's letter
    ("ולמסעדה", "במסעדה"),
    ("הלקוח", "לקוח"),
])
def test_a_hebrew_word_meets_itself_with_a_prefix(prefixed: str, bare: str) -> None:
    assert set(terms(prefixed)) & set(terms(bare))


def test_a_hebrew_word_is_indexed_as_written_and_without_its_prefix() -> None:
    assert terms("בקובץ") == ["בקובץ", "בקוב*", "קובץ", "קובץ*"]
    assert terms("שלח") == ["שלח", "שלח*"]  # three letters: nothing comes off ("send", not "that" + two)
    assert terms("בית") == ["בית", "בית*"]
    assert terms("והצג")[2:] == ["הצג", "הצג*"]  # "וה" would leave two letters: only "ו" comes off


@pytest.mark.parametrize(("text", "expected"), [
    ("Exports spreadsheet files", ["export", "expo*", "spreadsheet", "spre*", "fil", "file*"]),
    ("getWeatherForecast queries", ["get", "get*", "weather", "weat*", "forecast", "fore*", "queri", "quer*"]),
    ("bar pdf sql", ["bar", "bar*", "pdf", "pdf*", "sql", "sql*"]),
])
def test_english_words_keep_their_terms(text: str, expected: list[str]) -> None:
    assert terms(text) == expected


def test_a_request_finds_its_tool_through_an_inflected_or_prefixed_form() -> None:
    index = ToolIndex([IndexedTool("fuel_prices", "fuel_prices", "Узнать цену бензина на заправках."),
                       IndexedTool("find_file", "find_file", "חיפוש קובץ לפי שם."),
                       IndexedTool("widget", "widget", "Adjust the dashboard widget.")])
    assert [hit.key for hit in index.search("цены")] == ["fuel_prices"]
    assert [hit.key for hit in index.search("מה כתוב בקובץ")] == ["find_file"]


@pytest.mark.parametrize(("run", "within"), [
    ("ອາກາດມື້ນີ້", "ເບິ່ງພະຍາກອນອາກາດ"),  # Lao: "weather" inside "weather today" and "forecast"
    ("អាកាសធាតុថ្ងៃនេះ", "ពិនិត្យមើលអាកាសធាតុ"),  # Khmer, with a coeng-stacked consonant
    ("ဒီနေ့မိုးလေဝသ", "မိုးလေဝသခန့်မှန်းချက်"),  # Myanmar
])
def test_lao_khmer_and_myanmar_runs_meet_at_their_cluster_bigrams(run: str, within: str) -> None:
    assert len(split_words(run)) == 1
    shared = set(terms(run)) & set(terms(within))
    assert len(shared) >= 3
    assert all(not term.endswith("*") for term in terms(run))  # n-grams, no English truncation


def test_a_mark_alone_is_not_a_word_and_does_not_break_the_next() -> None:
    assert terms("\u093f फ़ाइल") == terms("फ़ाइल")


def test_compact_folds_as_words_do() -> None:
    assert compact("Café-Größe") == "cafegrosse"


def test_a_compound_word_finds_a_tool_that_names_its_last_part() -> None:
    index = ToolIndex([
        IndexedTool("add_event", "add_event", "Einen Termin in den Kalender eintragen."),
        IndexedTool("hang_picture", "hang_picture", "Ein Bild an die Wand hängen."),
        IndexedTool("send_mail", "send_mail", "Eine Nachricht senden."),
    ])
    # "Wand" (wall) is a word of the other tool: only the last part says what is wanted.
    assert top(index, "Wandkalender") == "add_event"
    assert top(index, "mein neuer Wandkalender") == "add_event"


def test_a_name_missing_a_letter_is_left_to_the_names_not_cut_as_a_compound() -> None:
    # "esearchhelper" ends with "helper", which the other tool's name and description say more.
    index = ToolIndex([
        IndexedTool("ResearchHelper", "ResearchHelper", "Finds papers on a subject."),
        IndexedTool("HelperBot", "HelperBot", "A helper for writing letters, a friendly helper."),
        IndexedTool("weather", "weather", "Weather of a city."),
        IndexedTool("translate", "translate", "Translate text."),
        IndexedTool("timer", "timer", "Set a timer."),
    ])
    assert top(index, "esearchhelper") == "ResearchHelper"


# --- the catalog -----------------------------------------------------------------------------


@pytest.mark.parametrize(("query", "expected"), [
    ("मेरा ऑर्डर कहाँ है", "track_order_hi"),
    ("कल बारिश होगी क्या", "weather_hi"),
    ("हिन्दी में अनुवाद चाहिए", "translate_hi"),
    ("বাসের টিকিট চাই", "book_train_bn"),
    ("இந்த கோப்பை பதிவேற்று", "upload_file_ta"),
    ("كم رصيدي؟", "account_statement_ar"),
    ("متى صلاة المغرب اليوم", "prayer_times_ar"),
    ("رزرو هتل", "book_hotel_fa"),
    ("поставь будильник на 6:30", "set_alarm_ru"),
    ("какая погода в Москве", "weather_ru"),  # "погода" meets "погоды" at its stem
    ("блокировка карты", "block_card_ru"),
    ("сколько стоит поездка до аэропорта", "call_taxi_ru"),
    ("מה היתרה בחשבון שלי", "show_balance_he"),  # "בחשבון" meets "החשבון"
    ("מצא את הלקוח דני כהן", "find_customer_he"),
    ("תכוון את השעון המעורר לשש", "set_alarm_he"),
    ("αποστολη μηνυματος", "send_message_el"),
    ("dat mon an giao tan noi", "order_food_vi"),
    ("pon una cancion de Shakira", "play_song_es"),
    ("datei loschen", "delete_file_de"),
    ("Zahnarzttermin für Montag", "book_appointment_de"),  # compounds: "Termin" is the last part
    ("Lebensmittelausgaben erfassen", "household_budget_de"),
    ("sportschoolabonnement stopzetten", "renew_subscription_nl"),
    ("nachtapotheek Utrecht", "find_pharmacy_nl"),
    ("restaurangbokning för fyra", "reserve_table_sv"),
    ("doviz kurlari", "exchange_rates_tr"),
    ("ພະຍາກອນອາກາດວຽງຈັນ", "weather_lo"),
    ("អាកាសធាតុនៅភ្នំពេញ", "weather_km"),
    ("ရန်ကုန်မြို့ မိုးလေဝသ", "weather_my"),
])
def test_requests_in_their_own_script(catalog: ToolIndex, query: str, expected: str) -> None:
    assert top(catalog, query) == expected


def test_nearly_every_request_of_the_catalog_finds_its_tool_in_the_top_five(catalog: ToolIndex) -> None:
    # A few ask with a synonym no description has ("anular" for "cancelar", "سداد" for "دفع").
    ranks = []
    for entry in WORLD_ENTRIES:
        for query in entry["queries"]:
            found = [hit.key for hit in catalog.search(query, limit=10)]
            ranks.append(found.index(entry["name"]) + 1 if entry["name"] in found else math.inf)
    assert len(ranks) > 100
    assert sum(rank <= 5 for rank in ranks) / len(ranks) >= 0.95
    assert sum(rank == 1 for rank in ranks) / len(ranks) >= 0.9
