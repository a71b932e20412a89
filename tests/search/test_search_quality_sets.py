"""Rules of the lexical search that LiveMCPBench's catalog (bench/search_quality.py) brought out:
a word of three letters counts as much as a longer one, the words a request asks with
("for", "to", "a") find a tool only when its other words find none, never as part of a name, and
a file path in a request is read as a file of its type, not as its folders' and name's words."""

from __future__ import annotations

from bridge.search.index import IndexedTool, ToolIndex
from bridge.search.tokenizer import query_terms, terms


def keys(hits) -> list[str]:
    return [hit.key for hit in hits]


def test_a_word_of_three_letters_is_its_own_truncation() -> None:
    # A word of four letters or more has two terms (stem, truncation): one of three had one,
    # and weighed half as much in a query.
    assert terms("pdf bar s3") == ["pdf", "pdf*", "bar", "bar*", "s3", "s3*"]
    assert terms("charts") == ["chart", "char*"]
    assert query_terms("draw a bar chart") == ["draw", "draw*", "bar", "bar*", "chart", "char*"]


def test_a_short_word_of_the_request_counts_as_much_as_a_long_one() -> None:
    # Two tools alike but for one word each: "map" (three letters) and "street" (six). A
    # request naming both words put the map tool at half the street tool's score; now the
    # words weigh the same, and only the letter trigrams of the longer word tell them apart.
    index = ToolIndex([
        IndexedTool("show_map", "show_map", "Show a map of a place."),
        IndexedTool("show_street", "show_street", "Show a street of a place."),
        IndexedTool("send_email", "send_email", "Send an email to a contact."),
        IndexedTool("get_weather", "get_weather", "Current weather for a city."),
    ])
    scores = {hit.key: hit.score for hit in index.search("street map")}
    assert scores["show_map"] > 0.8 * scores["show_street"]


def catalog() -> ToolIndex:
    return ToolIndex([
        IndexedTool("create_invoice", "create_invoice", "Create an invoice for a customer with line items."),
        IndexedTool("fill_form", "fill_form", "Fill in the fields of the page's form."),
        IndexedTool("weather_forecast", "weather_forecast", "Weather of the coming days in a city."),
        IndexedTool("send_email", "send_email", "Send an email to a contact."),
        IndexedTool("convert_units", "convert_units", "Convert a quantity between units of measure."),
    ])


def test_a_word_of_asking_is_not_looked_for_in_names() -> None:
    # No word but "for" and "a" is in the catalog; "for" is inside "fill_form" and
    # "weather_forecast", which have nothing to do with bills.
    found = keys(catalog().search("make a bill for a client"))
    assert "fill_form" not in found and "weather_forecast" not in found


def test_words_of_asking_find_a_tool_when_nothing_else_does() -> None:
    # As BM25 over all the request's words would: "for a customer" is the nearest the
    # catalog says to "a bill for a client".
    assert keys(catalog().search("make a bill for a client"))[0] == "create_invoice"


def test_a_name_fragment_is_still_found_and_words_matching_come_first() -> None:
    index = catalog()
    assert keys(index.search("forecast"))[0] == "weather_forecast"  # a word of the name
    assert keys(index.search("forec"))[0] == "weather_forecast"  # part of one
    assert keys(index.search("email to my boss"))[0] == "send_email"  # words before words of asking


def test_a_file_path_in_a_request_is_read_as_a_file_and_its_extension() -> None:
    assert query_terms("save it to /root/markdown/report.md.") == query_terms("save it to file md")
    assert query_terms("open ~/notes/todo.txt") == query_terms("open file txt")
    assert query_terms(r"attach C:\Users\me\plan.docx") == query_terms("attach file docx")
    assert query_terms("list /var/log/nginx/") == query_terms("list file")


def test_urls_and_words_joined_by_a_slash_are_left_as_written() -> None:
    assert query_terms("fetch https://example.com/pricing/plans.html") == query_terms(
        "fetch https example com pricing plans html")
    assert query_terms("input/output and/or /login") == query_terms("input output and or login")


def path_catalog() -> ToolIndex:
    return ToolIndex([
        IndexedTool("write_file", "write_file", "Write text content to a file, creating it if needed."),
        IndexedTool("markdown_to_mindmap", "markdown_to_mindmap", "Convert Markdown text into a mind map."),
        IndexedTool("export_report", "export_report", "Export a sales report as a PDF document."),
        IndexedTool("send_email", "send_email", "Send an email to a contact."),
    ])


def test_the_folders_and_name_of_a_path_do_not_pull_in_tools_of_those_words() -> None:
    # The request wants a summary written to a file; "markdown" and "report" are only where.
    found = keys(path_catalog().search("write the summary to /root/markdown/report.md"))
    assert found[0] == "write_file"
    assert "markdown_to_mindmap" not in found[:1] and "export_report" not in found[:2]


def test_the_extension_of_a_path_still_says_what_kind_of_file_it_is() -> None:
    index = path_catalog()
    index.add([IndexedTool("read_pdf", "read_pdf", "Read the text of a PDF file.")])
    assert keys(index.search("read ~/Downloads/invoice.pdf"))[0] == "read_pdf"
