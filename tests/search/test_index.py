"""The tool search index (bridge.search.index, with its tokenizer and BM25): tokenizer, ranking rules,
incremental updates, and what a full garbage collection follows of it (no server)."""

from __future__ import annotations

import gc
import math
import random
from collections import Counter
from types import FunctionType, ModuleType

import numpy as np
import pytest
from gc_support import followed
from rank_bm25 import BM25Okapi

from bridge.search._bm25 import K1, B, LiveBM25, squared_idf
from bridge.search.index import RERANK_DEPTH, IndexedTool, SearchHit, ToolIndex
from bridge.search.tokenizer import split_words, stem, terms, tokenize, word_terms, words


def tool(key: str, description: str = "", **fields) -> IndexedTool:
    return IndexedTool(key=key, name=fields.pop("name", key), description=description, **fields)


def keys(hits: list[SearchHit]) -> list[str]:
    return [hit.key for hit in hits]


# Tools that share no word with the others, so that no word of interest is in every tool
# (which would give it zero idf and leave the ranking to the name fallback).
UNRELATED = [tool(f"other_{n}", f"Unrelated {topic}") for n, topic in enumerate(["painting", "music", "cooking"])]


# --- tokenizer -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("user_confirm", ["user", "confirm"]),  # snake
        ("user-confirm", ["user", "confirm"]),  # kebab
        ("files.read", ["files", "read"]),  # dots
        ("calendar:create:event", ["calendar", "create", "event"]),  # colons
        ("getWeatherForecast", ["get", "weather", "forecast"]),  # camelCase
        ("HTTPServerStatus", ["http", "server", "status"]),  # an acronym before a word
        ("getV2Data", ["get", "v2", "data"]),  # digits stay with their letters
        ("upload_to_s3 in 2024", ["upload", "to", "s3", "in", "2024"]),
        ("PDF&URLTool", ["pdf", "url", "tool"]),
    ],
)
def test_split_words_on_separators_case_and_digits(text: str, words: list[str]) -> None:
    assert split_words(text) == words


@pytest.mark.parametrize(
    "text",
    ["getWeather.forecast, then HTTPServer", "a\tb\nc  d", "x-y_z:w", "tabs\tand\u00a0no-break spaces",
     "Ünïcode ÉCOLE straße", "(parenthesised) [getV2Data]", "", "   ", "upload_to_s3 in 2024!"],
)
def test_pieces_between_white_space_give_the_words_of_the_whole_text(text: str) -> None:
    # The index splits at white space first and looks each piece up; no word spans white
    # space, so this must be what splitting the whole text gives.
    whole = [word for word in split_words(text) if len(word) > 1]
    assert words(text) == whole
    assert terms(text) == [term for word in whole for term in word_terms(word)]


def test_tokenize_lowercases_and_drops_one_letter_words() -> None:
    assert tokenize("Get a B Value") == ["get", "valu"]


@pytest.mark.parametrize(
    ("forms", "common"),
    [
        (["file", "files", "filed", "filing"], "fil"),
        (["create", "creates", "created", "creating"], "creat"),
        (["query", "queries", "queried"], "queri"),
        (["movie", "movies"], "movi"),
        (["study", "studies", "studied", "studying"], "studi"),
        (["match", "matches", "matched", "matching"], "match"),
        (["run", "runs", "running"], "run"),
    ],
)
def test_stem_folds_plural_and_verb_endings(forms: list[str], common: str) -> None:
    assert {stem(form) for form in forms} == {common}


@pytest.mark.parametrize("word", ["status", "analysis", "class", "string", "need"])
def test_stem_leaves_words_that_only_look_inflected(word: str) -> None:
    assert stem(word) == word


def test_movie_and_movies_meet_at_one_stem_in_the_index() -> None:
    # Both tools share the truncation "movi*" with the query; only the stem tells them apart
    # ("movies" was "movy" and "movie" "movi" before -y became -i).
    index = ToolIndex([tool("a_moving", "Moving company quotes"), tool("b_cinema", "Movie showtimes"), *UNRELATED])
    assert keys(index.search("movies")) == ["b_cinema", "a_moving"]
    assert stem("movies") == stem("movie") == "movi"


def test_stemming_applies_to_documents_and_queries() -> None:
    # Three-letter stems, which the four-letter truncations cannot join.
    index = ToolIndex([tool("ship", "Ships boxes to any address"), tool("file_return", "File a tax return"),
                       *UNRELATED])
    assert keys(index.search("box")) == ["ship"]  # "boxes" stemmed in the document
    assert keys(index.search("taxes")) == ["file_return"]  # "taxes" stemmed in the query
    assert keys(index.search("shipping")) == ["ship"]


# --- ranking rules -------------------------------------------------------------------------


def test_exact_name_goes_first_whatever_bm25_says() -> None:
    index = ToolIndex([
        tool("search", "Book design courses"),  # its name is the query, its description is not
        tool("web_search", "Search the web; search results, search suggestions"),
        tool("search_files", "Search files by name and search inside them"),
        *UNRELATED,
    ])
    for query in ("search", "SEARCH", " search "):
        assert keys(index.search(query))[0] == "search"
    assert keys(index.search("search the web"))[0] == "web_search"  # not a name: BM25 decides


@pytest.mark.parametrize("query", ["user_confirm", "userConfirm", "user confirm", "User Confirm", "user-confirms"])
def test_near_exact_name_forms_match(query: str) -> None:
    index = ToolIndex([
        tool("user_confirm", "Ask before acting"),
        tool("confirm_order", "Confirm an order for a user; the user confirms, then the user pays"),
        *UNRELATED,
    ])
    assert keys(index.search(query))[0] == "user_confirm"


def test_name_match_also_counts_the_key() -> None:
    index = ToolIndex([tool("page1_lookup", "Find a record", name="lookup"),
                       tool("finder", "Lookup helper: lookup by id, lookup by name"), *UNRELATED])
    assert keys(index.search("page1_lookup"))[0] == "page1_lookup"
    assert keys(index.search("lookup"))[0] == "page1_lookup"


def test_zero_idf_falls_back_to_substring_of_names() -> None:
    # "widget" is in every tool (their app), so its idf is zero and BM25 ranks nothing.
    index = ToolIndex([
        tool("widget_inventory", "Count stock", app="Widget Shop"),
        tool("create_order", "Place an order", app="Widget Shop"),
        tool("refund", "Give money back", app="Widget Shop"),
    ])
    assert keys(index.search("widget")) == ["widget_inventory"]
    # Zero idf too, and in no name: the tools that have the word, so a room of few tools is found by its words.
    assert sorted(keys(index.search("shop"))) == ["create_order", "refund", "widget_inventory"]
    assert index.search("bakery") == []


def test_a_one_tool_room_is_found_by_its_words() -> None:
    index = ToolIndex([tool("echo", "Say the text back")])
    assert keys(index.search("say the text back")) == ["echo"]
    assert index.search("weather") == []


def test_substring_fallback_finds_part_of_a_name() -> None:
    index = ToolIndex([tool("calculator", "Evaluate arithmetic"), tool("tax_calculator", "Income tax"),
                       tool("weather", "Forecasts")])
    assert keys(index.search("culat")) == ["calculator", "tax_calculator"]  # larger share of the name first


def test_filler_words_of_a_request_do_not_pull_in_tools_named_with_them() -> None:
    index = ToolIndex([
        tool("get_weather", "Weather forecast for a city"),
        tool("about_me", "Edit the profile page"),
        tool("do_not_disturb", "Silence notifications"),
        tool("will_writer", "Draft a last will"),
        tool("please_hold", "Play music while waiting"),
        *UNRELATED,
    ])
    query = "Hello, could you please do me a favour and tell me what the weather will be? Thanks!"
    assert keys(index.search(query, limit=10)) == ["get_weather"]
    # A query of nothing but such words keeps them: the tool is still found by its name.
    assert keys(index.search("about me"))[0] == "about_me"
    assert keys(index.search("will"))[0] == "will_writer"


def test_near_duplicates_do_not_crowd_out_a_different_tool() -> None:
    # The same tool from three tabs and a v2 with one more word, all above a different tool.
    copies = [tool(key, "Get the weather forecast for a city, hour by hour", name="weather_forecast")
              for key in ("weather_forecast", "weather_forecast__tab2", "weather_forecast__tab3")]
    v2 = tool("weather_forecast_v2", "Get the weather forecast for a city, hour by hour, with radar")
    alerts = tool("weather_alerts", "Severe weather warnings for a city")
    index = ToolIndex([*copies, v2, alerts, *UNRELATED])
    top = keys(index.search("weather forecast city", limit=2))
    assert top == ["weather_forecast", "weather_alerts"]
    hits = index.search("weather forecast city", limit=10)
    assert keys(hits)[:2] == top and set(keys(hits)) == {t.key for t in [*copies, v2, alerts]}
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)


def test_tools_sharing_most_words_are_not_near_duplicates() -> None:
    # Renting and buying a house: most of their words shared, two different tools.
    renting = tool("house_renting", "Find a house to rent in a city, with price, rooms and area")
    buying = tool("house_buying", "Find a house to buy in a city, with price, rooms and area")
    other = tool("area_map", "Map of an area in a city")
    index = ToolIndex([renting, buying, other, *UNRELATED])
    assert keys(index.search("house in a city with rooms", limit=2)) == ["house_buying", "house_renting"]


def test_nonsense_query_returns_nothing() -> None:
    index = ToolIndex([tool("get_weather", "Weather forecast for a city"), tool("send_email", "Send an email")])
    assert index.search("zzqx flibber") == []
    assert index.search("") == []
    assert index.search("!!! ?") == []


def test_limit_is_respected() -> None:
    index = ToolIndex([*(tool(f"report_{n}", "Monthly report") for n in range(10)), *UNRELATED])
    assert len(index.search("report", limit=3)) == 3
    assert len(index.search("report", limit=1)) == 1
    assert index.search("report", limit=0) == []


def test_hits_are_best_first_with_float_scores() -> None:
    index = ToolIndex([tool("plan_trip", "Plan a trip; checks the weather"),
                       tool("get_weather", "Weather alerts"),
                       tool("send_email", "Send an email")])
    hits = index.search("weather")
    assert keys(hits) == ["get_weather", "plan_trip"]
    assert all(type(hit.score) is float for hit in hits)
    assert hits[0].score > hits[1].score > 0


def test_autocut_drops_the_tail_after_a_steep_fall_in_score() -> None:
    strong = [tool(f"invoice_export_{n}", "Export invoices as spreadsheets") for n in range(4)]
    weak = tool("spreadsheet_view", "Open a spreadsheet")
    index = ToolIndex([*strong, weak, *UNRELATED])
    hits = index.search("export invoice spreadsheet", limit=10)
    assert keys(hits) == [t.key for t in strong]
    assert index.search("spreadsheet", limit=10)  # a lone weak match is still returned


def test_trigrams_reorder_word_matches_by_shared_letters() -> None:
    # "weathermen" is no term of either tool, and both match "forecast" and "weat*" alike;
    # the letters of "weatherman" are closer, so that tool goes first (keys would put the
    # other first on a tie).
    index = ToolIndex([tool("a_forecast", "Forecast for weather stations"),
                       tool("b_forecast", "Forecast for weatherman shows"),
                       tool("heathermen", "Heathermen club"), *UNRELATED])
    found = keys(index.search("weathermen forecast"))
    assert found == ["b_forecast", "a_forecast"]  # a tool sharing only letters is not added


def test_a_reused_slot_is_not_reranked_with_the_trigrams_of_its_former_tool() -> None:
    tools = [tool("a_forecast", "Forecast for weather stations"), tool("b_forecast", "Forecast for weatherman shows"),
             *UNRELATED]
    index = ToolIndex(tools)
    assert keys(index.search("weathermen forecast"))[0] == "b_forecast"  # its trigrams are now cached
    index.remove(["b_forecast"])
    replacement = tool("c_forecast", "Forecast for cricket fans")  # takes the free slot
    index.add([replacement])
    fresh = ToolIndex([tools[0], *UNRELATED, replacement])
    assert index.search("weathermen forecast", limit=10) == fresh.search("weathermen forecast", limit=10)
    assert keys(index.search("weathermen forecast")) == ["a_forecast", "c_forecast"]


# --- what is indexed -----------------------------------------------------------------------


def test_parameter_names_and_descriptions_are_searchable_one_level_deep() -> None:
    schema = {
        "type": "object",
        "properties": {
            "recipientAddress": {"type": "string", "description": "Where the parcel goes"},
            "options": {
                "type": "object",
                "properties": {
                    "priority_level": {"type": "string", "description": "How urgent the delivery is"},
                    "deep": {"type": "object", "properties": {"hidden_flag": {"description": "Unreachable marker"}}},
                },
            },
            "items": {"type": "array", "items": {"type": "object", "properties": {"sku": {"description": "Barcode"}}}},
        },
    }
    index = ToolIndex([tool("ship", "Send something", input_schema=schema), tool("other", "Something else")])
    for query in ("recipient", "address", "parcel", "priority", "urgent", "sku", "barcode"):
        assert keys(index.search(query)) == ["ship"], query
    # Two levels down is past the nesting the index reads.
    assert index.search("hidden") == []
    assert index.search("unreachable") == []


def test_string_enum_values_of_parameters_and_array_items_are_searchable() -> None:
    schema = {
        "type": "object",
        "properties": {
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "formats": {"type": "array", "items": {"type": "string", "enum": ["pdf", "docx"]}},
            "level": {"enum": [1, 2, None, {"kelvin": 1}]},  # not strings: not read
            "options": {"type": "object", "properties": {"currency": {"enum": ["EUR", "USD"]}}},
        },
    }
    index = ToolIndex([tool("convert", "Convert a reading", input_schema=schema),
                       tool("other", "Report a reading", input_schema={"properties": {"unit": {"type": "string"}}}),
                       *UNRELATED])
    for query in ("fahrenheit", "temperature in Fahrenheit", "docx", "export as PDF", "EUR"):
        assert keys(index.search(query)) == ["convert"], query
    assert index.search("kelvin") == []


def test_malformed_schema_is_ignored() -> None:
    index = ToolIndex([tool("odd", "Odd tool", input_schema={"properties": ["not", "a", "mapping"]}),
                       tool("odder", "Odder tool",
                            input_schema={"properties": {"x": "not a schema", "y": {"description": 3}}})])
    assert set(keys(index.search("odd"))) == {"odd"}
    assert keys(index.search("odder")) == ["odder"]


def test_a_word_hundreds_of_tools_share_reranks_only_the_first_of_them_by_key_whatever_their_slots() -> None:
    # All 400 tie on "export": the rerank and the near-duplicate test see the first by key only
    # (at 10,000 tools, all of the tie took them seconds).
    records = [tool(f"export_{n:03}", f"Export record {n:03}") for n in range(400)] + UNRELATED
    shuffled = random.Random(3).sample(records, len(records))
    index, reordered = ToolIndex(records), ToolIndex(shuffled)
    hits = index.search("export", limit=5)
    assert len(hits) == 5 and hits == reordered.search("export", limit=5)
    assert len(index._trigram_bags) <= RERANK_DEPTH


def test_app_and_title_are_searchable() -> None:
    index = ToolIndex([
        tool("add_item", "Add an item", app="Kitchen Planner"),
        tool("add_row", "Add a row", title="Spreadsheet row appender"),
    ])
    assert keys(index.search("kitchen")) == ["add_item"]
    assert keys(index.search("spreadsheet")) == ["add_row"]


def test_empty_index_returns_nothing() -> None:
    index = ToolIndex()
    assert index.search("anything") == []
    assert len(index) == 0
    assert "anything" not in index


# --- updates -------------------------------------------------------------------------------


def test_add_replaces_a_tool_with_the_same_key() -> None:
    index = ToolIndex([tool("lookup", "Find a customer"), tool("other", "Unrelated")])
    index.add([tool("lookup", "Find an invoice")])
    assert len(index) == 2
    assert index.search("customer") == []
    assert keys(index.search("invoice")) == ["lookup"]


def test_remove_drops_a_tool_from_results() -> None:
    index = ToolIndex([tool("get_weather", "Weather forecast"), tool("plan_trip", "Trip plan with weather"),
                       tool("send_email", "Send an email")])
    index.remove(["get_weather", "never_added"])
    assert "get_weather" not in index and "plan_trip" in index
    assert len(index) == 2
    assert keys(index.search("weather")) == ["plan_trip"]
    assert keys(index.search("get_weather forecast")) == ["plan_trip"]
    index.remove(["plan_trip"])
    assert index.search("weather") == []


def test_many_add_remove_cycles_match_a_freshly_built_index() -> None:
    rng = random.Random(1)
    words = ("get list create delete send email invoice order user report weather calendar event file share "
             "10000 aaaa ababab mississippi").split()  # the last hold repeated letter trigrams

    def random_tool(key: str) -> IndexedTool:
        return IndexedTool(
            key=key,
            name="_".join(rng.sample(words, 2)),
            description=" ".join(rng.choices(words, k=rng.randint(0, 8))),
            app=rng.choice([None, "Mail", "Calendar"]),
            input_schema={"properties": {rng.choice(words): {"description": " ".join(rng.choices(words, k=3))}}},
        )

    index = ToolIndex()
    live: dict[str, IndexedTool] = {}
    for _ in range(300):
        action = rng.random()
        if action < 0.5 or not live:
            batch = [random_tool(f"t{rng.randrange(60)}") for _ in range(rng.randint(1, 5))]
            index.add(batch)
            live.update((t.key, t) for t in batch)
        else:
            gone = rng.sample(sorted(live), rng.randint(1, min(4, len(live))))
            index.remove(gone)
            for key in gone:
                del live[key]
        if rng.random() < 0.2:  # searching in between fills the per-term cache; it must not go stale
            index.search(rng.choice(words))

    fresh = ToolIndex(live.values())
    assert len(index) == len(fresh) == len(live)
    queries = words + [" ".join(rng.sample(words, 3)) for _ in range(30)] + [next(iter(live.values())).name]
    for query in queries:
        assert index.search(query, limit=10) == fresh.search(query, limit=10), query


def test_a_page_of_tools_coming_and_going_between_searches_matches_a_fresh_index() -> None:
    # Over a hundred changes between two searches: what was kept is dropped, not replayed.
    topics = ["weather forecast", "email report", "calendar event", "music playlist"]
    base = [tool(f"base_{n}", f"{topics[n % 4]} number {n}") for n in range(20)]
    page = [tool(f"page_{n}", f"Invoice email weather export {n}") for n in range(150)]
    index = ToolIndex(base)
    assert keys(index.search("weather email invoice", limit=10))
    index.add(page)
    index.remove([t.key for t in page[:100]])
    fresh = ToolIndex([*base, *page[100:]])
    for query in ("weather email invoice", "forecast", "export 120", "invoice"):
        assert index.search(query, limit=10) == fresh.search(query, limit=10), query


def test_retired_tools_are_found_no_more_and_once_swept_the_index_is_as_if_built_without_them() -> None:
    # A page leaving with many tools: hidden at once, its entries freed a slice at a time.
    base = [tool(f"base_{n}", f"Invoice email weather {n}") for n in range(12)]
    page = [tool(f"page_{n}", f"Invoice email weather export invoice {n}") for n in range(60)]
    index = ToolIndex([*base, *page])
    index.retire(t.key for t in page)
    assert len(index) == 12 and "page_3" not in index and "base_3" in index
    for query in ("invoice export", "page_3", "page 3", "page", "pag", "invoice email weather 7"):
        assert all(hit.key.startswith("base_") for hit in index.search(query, limit=10)), query
    assert len(index.search("invoice export", limit=10)) == 10  # the others take the places
    assert index.sweep(25) == 35
    newcomer = tool("page_3", "Export the weather report")  # a freed slot, or a new one
    index.add([newcomer])
    assert keys(index.search("page_3")) == ["page_3"]
    assert index.sweep() == 0
    fresh = ToolIndex([*base, newcomer])
    for query in ("invoice export", "weather report", "page 3", "email 7", "pag"):
        assert index.search(query, limit=10) == fresh.search(query, limit=10), query


def test_removing_a_tool_whose_words_repeat_a_trigram():
    # " 10000 " holds the trigram "000" twice; the tool must still leave cleanly.
    index = ToolIndex([IndexedTool("a", "budget_10000", "Limit of 10000 and 1000100 units"),
                       IndexedTool("b", "weather_tool", "Forecast for a city"),
                       IndexedTool("c", "music_tool", "Play a song")])
    index.remove(["a"])
    assert "a" not in index and [hit.key for hit in index.search("weather forecast")] == ["b"]
    index.add([IndexedTool("a", "budget_10000", "Limit of 10000 units")])
    assert index.search("budget 10000")[0].key == "a"


def tracked_within(root: object) -> int:
    """Objects the garbage collector tracks that `root` reaches (classes, modules and functions,
    which every object reaches, not followed): what a full collection walks for it. Tuples are
    not counted: one holding nothing tracked is untracked by the first collection to see it.
    Counted after a collection, which also untracks the dicts holding nothing tracked: whether
    one ran since the index was built depends on what the process allocated before."""
    gc.collect()
    seen, count, stack = set(), 0, [root]
    while stack:
        found = stack.pop()
        if id(found) in seen or not gc.is_tracked(found) or isinstance(found, type | ModuleType | FunctionType):
            continue
        seen.add(id(found))
        count += not isinstance(found, tuple)
        stack.extend(gc.get_referents(found))
    return count


def test_a_full_collection_walks_no_more_of_a_large_index_than_of_a_small_one() -> None:
    # A full collection stops the event loop while it walks every tracked object: the index's
    # per-tool entries (term counts, postings, names) are kept where it does not look.
    def index_of(n: int) -> ToolIndex:
        index = ToolIndex(tool(f"app_{n}_{i}", f"Export the invoice number {i} of customer {i % 7}",
                               input_schema={"properties": {"id": {"description": f"which invoice (#{i})"}}})
                          for i in range(n))
        for query in ("export invoice", "customer 3", "app 12"):  # what searches keep counts too
            index.search(query)
        return index

    assert tracked_within(index_of(2000)) == tracked_within(index_of(200))


def test_the_index_adds_one_reference_a_tool_to_what_a_full_collection_follows():
    # Its term counts; what the index keeps by slot or by name (keys, names, a name's slots, the
    # names joined for the substring fallback) is where the collector does not look, and a slot
    # freed is reused.
    verbs, nouns = ["get", "send", "list", "track", "book"], ["invoice", "order", "flight", "parcel", "note", "photo"]

    def tools(start: int, count: int) -> list[IndexedTool]:  # a few words in all: postings that do not grow
        named = ((n, verbs[n % 5], nouns[n // 5 % 6]) for n in range(start, start + count))
        return [IndexedTool(key=f"{verb}_{noun}_{n // 30}", name=f"{verb}_{noun}",
                            description=f"{verb.title()} the {noun}.") for n, verb, noun in named]

    index = ToolIndex(tools(0, 30))
    assert index.search("calc") == []  # no word matches: the names are joined to look for it in them
    before = followed()
    index.add(tools(30, 3000))
    assert [hit.key for hit in index.search("book flight", 1)] == ["book_flight_0"]
    assert index.search("calc") == []
    assert (followed() - before) / 3000 < 1.5
    index.remove(tool.key for tool in tools(30, 3000))
    index.add(tools(30, 3000))
    assert index.search("calc") == []
    assert (followed() - before) / 3000 < 1.5


# --- the BM25 scorer against rank_bm25's ------------------------------------------------------

REFERENCE_CORPUS = [
    "get weather forecast for a city weather".split(),
    "send an email to a contact".split(),
    "create calendar event meeting".split(),
    "list unread email messages email inbox".split(),
    "convert currency exchange rate".split(),
    "book a flight ticket".split(),
    "translate text between languages text".split(),
    "search the web for pages".split(),
]


def okapi_idf(corpus_size: int, df: int) -> float:
    """BM25Okapi's idf before its floor (which no term of REFERENCE_CORPUS reaches)."""
    return math.log(corpus_size - df + 0.5) - math.log(df + 0.5)


def test_live_bm25_scores_equal_rank_bm25_okapi_given_its_idf() -> None:
    # The index's own incremental BM25 against BM25Okapi built the supported way, with the
    # same k1 and b and the same idf: the same scores for every document and query.
    reference = BM25Okapi(REFERENCE_CORPUS, k1=K1, b=B)
    assert all(reference.idf[t] == pytest.approx(okapi_idf(8, sum(t in d for d in REFERENCE_CORPUS)))
               for t in reference.idf)
    live = LiveBM25(k1=K1, b=B, idf=okapi_idf)
    for slot, document in enumerate(REFERENCE_CORPUS):
        live.put(slot, Counter(document))
    queries = [["weather"], ["email", "email", "contact"], ["text", "web", "flight", "nothing"],
               [word for document in REFERENCE_CORPUS for word in document]]
    for query in queries:
        ours = live.totals(query, len(REFERENCE_CORPUS))
        assert ours == pytest.approx(reference.get_scores(query), rel=1e-12, abs=1e-12), query
        assert ours.any()


@pytest.mark.parametrize("churn", [0, 3, 200])  # replayed onto the kept counts, or too many: dropped
def test_live_bm25_after_changes_scores_as_a_fresh_okapi_of_what_is_left(churn: int) -> None:
    # Score (which fills the caches), change, score again: the same as BM25Okapi built anew
    # over the documents left. Slots 1 and 5 are emptied, slot 1 is refilled; before that,
    # `churn` documents come and go in slot 8.
    live = LiveBM25(k1=1.2, b=0.75, idf=okapi_idf)
    for slot, document in enumerate(REFERENCE_CORPUS):
        live.put(slot, Counter(document))
    query = ["email", "text", "flight", "weather", "meeting"]
    live.totals(query, 8)
    for _ in range(churn):
        live.put(8, Counter(["email", "weather", "email"]))
        live.clear(8)
    live.clear(1)
    live.clear(5)
    replacement = "email a meeting invite".split()
    live.put(1, Counter(replacement))
    left = [REFERENCE_CORPUS[0], replacement, *REFERENCE_CORPUS[2:5], *REFERENCE_CORPUS[6:]]
    reference = BM25Okapi(left, k1=1.2, b=0.75)
    ours = live.totals(query, 9)[:8]
    assert ours[5] == 0  # the emptied slot
    assert np.delete(ours, 5) == pytest.approx(reference.get_scores(query), rel=1e-12, abs=1e-12)


def test_squared_idf_is_zero_for_a_term_every_document_has_and_never_negative() -> None:
    assert squared_idf(5, 5) == 0
    assert squared_idf(1, 1) == 0
    assert squared_idf(2, 1) > 0
    assert squared_idf(10, 1) > squared_idf(10, 3) > 0
