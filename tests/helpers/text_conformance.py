"""The text front end's conformance file, modeling_elmo/text_elmo_conformance.json: raw lines with their words, their
character ids and, for a batch of them, the padded ids and mask, one case per rule of the split and the id rule
(docs/onnx.md, "The split rule"), for clients written in other languages to test against.

Each case states its words by hand; the generator checks that the front end splits the line into them, so that the
file records the rule as written here, not whatever the code does. The ids are the front end's (the id rule, which
tests/model/test_vocabulary.py holds to bilm-tf's). tests/model/test_tokenizer_front_end.py checks that the
committed file is this generator's output and that `ElmoTokenizer` and `ElmoTextEncoder` both pass it. After a
change of a rule, write it again from the repository root:

    python tests/helpers/text_conformance.py
"""

from __future__ import annotations

import json
from pathlib import Path

from unicode_table import write_through_rename

from modeling_elmo.text_elmo import UNICODE_VERSION, ElmoTextEncoder

__all__ = ["CASES", "CONFORMANCE_FILE", "conformance_text"]

_ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE_FILE = _ROOT / "modeling_elmo" / "text_elmo_conformance.json"

ENGLAND = "\U0001f3f4\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f"
FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467"
PERSIAN = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"  # a zero-width non-joiner inside the word

# (the rule, the raw line, its words)
CASES: list[tuple[str, str, list[str]]] = [
    (
        "PTB: clitics split off",
        "The word's end, don't they'll?",
        ["The", "word", "'s", "end", ",", "do", "n't", "they", "'ll", "?"],
    ),
    (
        "PTB: numbers, abbreviations, inner hyphens and apostrophes, ... and --",
        "U.S. bio-identical o'clock costs 1,000.50 -- or 3.14... at 10:30",
        ["U.S.", "bio-identical", "o'clock", "costs", "1,000.50", "--", "or", "3.14", "...", "at", "10:30"],
    ),
    (
        "PTB: punctuation and symbols are words of their own",
        "(a)+[b]$5%!",
        ["(", "a", ")", "+", "[", "b", "]", "$", "5", "%", "!"],
    ),
    (
        "NFC: a decomposed accent is the precomposed word",
        "e\u0301cole \u00e9cole A\u030a",
        ["\u00e9cole", "\u00e9cole", "\u00c5"],
    ),
    (
        "NFC, not NFKC: ligatures and full-width digits stay",
        "\ufb01ne \uff11\uff12 x\u00b2",
        ["\ufb01ne", "\uff11\uff12", "x\u00b2"],
    ),
    (
        "whitespace: every Unicode space separates words",
        "a\tb\u00a0c\u3000d\u2028e\x1cf",
        ["a", "b", "c", "d", "e", "f"],
    ),
    ("Cc: a control character separates words", "wo\x00rd a\x1bb\x7fc\x85d", ["wo", "rd", "a", "b", "c", "d"]),
    ("Cf: the zero-width space separates words", "one\u200btwo\u200b", ["one", "two"]),
    (
        "Cf: other format characters are dropped",
        "wo\u200erd soft\u00adware \ufeffBOM \u2066x\u2069",
        ["word", "software", "BOM", "x"],
    ),
    (
        "Cf: joiners stay inside a word, go at its ends",
        f"{PERSIAN} \u200dword\u200d {FAMILY}",
        [PERSIAN, "word", FAMILY],
    ),
    (
        "grapheme clusters are never cut",
        f"\u2764\ufe0f! \U0001f44d\U0001f3fd \U0001f1eb\U0001f1f7\U0001f1e9\U0001f1ea 1\ufe0f\u20e3 {ENGLAND}",
        [
            "\u2764\ufe0f",
            "!",
            "\U0001f44d\U0001f3fd",
            "\U0001f1eb\U0001f1f7",
            "\U0001f1e9\U0001f1ea",
            "1\ufe0f\u20e3",
            ENGLAND,
        ],
    ),
    (
        "marks stay with what they follow",
        "x\u0301 (\u0301 \u0939\u093f\u0928\u094d\u0926\u0940",
        ["x\u0301", "(\u0301", "\u0939\u093f\u0928\u094d\u0926\u0940"],
    ),
    (
        "a mark with nothing to combine with is no word",
        "a \u0301 b \ufe0f c \u20e3 \u0301\u0301d \x00\u0903",
        ["a", "b", "c", "d"],
    ),
    (
        "sentence markers: the literal words <S> and </S> get the marker ids",
        "<S> hi </S> <s> <S>x \u200e<S>",
        ["<S>", "hi", "</S>", "<", "s", ">", "<", "S", ">", "x", "<S>"],
    ),
    ("a lone surrogate is dropped", "wo\ud800rd \udc00 \ud83d", ["word"]),
    (
        "the 48-byte cut, inside a character",
        "a" * 47 + "\u00e9 a" + "\u65e5" * 16 + " " + "x" * 60,
        ["a" * 47 + "\u00e9", "a" + "\u65e5" * 16, "x" * 60],
    ),
    (
        "other scripts",
        "\u65e5\u672c\u8a9e\u3067\u3059\u3002 na\u00efve \u0645\u0631\u062d\u0628\u0627",
        ["\u65e5\u672c\u8a9e\u3067\u3059", "\u3002", "na\u00efve", "\u0645\u0631\u062d\u0628\u0627"],
    ),
    (
        "rules 3-5: n't and a clitic need a word boundary after them (no word character follows): n'tx is a word",
        "n'tx don'tx n't don't it'sx 'sx it's",
        ["n'tx", "don'tx", "n't", "do", "n't", "it'sx", "'", "sx", "it", "'s"],
    ),
    (
        "rules 3-5: a chunk's end, a control, U+200B and a mark are word boundaries (the mark, left alone, is dropped)",
        "don't\u00a0it's I'm\u200bwe'd it's\x00x don't\u0301",
        ["do", "n't", "it", "'s", "I", "'m", "we", "'d", "it", "'s", "x", "do", "n't"],
    ),
    (
        "rules 3-5: the clitics' letters match in either ASCII case, and U+017F (long s) as s; nothing else does",
        "DON'T it'\u017f I'M We'Ll",
        ["DO", "N'T", "it", "'\u017f", "I", "'M", "We", "'Ll"],
    ),
    (
        "rule 1: a letter is a \\w that is no decimal digit and no _: numerals (No, Nl) are letters",
        "\u00bd.S. \u216b.\u2163. 1.S. \u00b2.x.",
        ["\u00bd.S.", "\u216b.\u2163.", "1", ".", "S", ".", "\u00b2.x."],
    ),
    (
        "rule 9: after the U+200D that ends a run of extenders, one more character: two joiners in a row take one",
        f"\U0001f468\u200d\u200d\U0001f469\U0001f467 {FAMILY}",
        ["\U0001f468\u200d\u200d\U0001f469", "\U0001f467", FAMILY],
    ),
    (
        "step 1: a tag sequence is kept only where its tags follow U+1F3F4 in the line as given, before any dropping",
        f"\U0001f3f4\u200e{ENGLAND[1:]} {ENGLAND[:3]}\u200e{ENGLAND[3:]} {ENGLAND}\u200e",
        ["\U0001f3f4", "\U0001f3f4", ENGLAND],
    ),
    (
        "step 5: a word's trailing joiners are removed, a lone joiner is no word, a joiner before a mark stays",
        f"word\u200d \U0001f44d\u200d\u200d \u200d a\u200d\u0301 {PERSIAN[:2]}\u200c",
        ["word", "\U0001f44d", "a\u200d\u0301", PERSIAN[:2]],
    ),
    (
        "only the clitics match case-insensitively: the Greek iota (U+0345 folds to it) is a letter, never a mark",
        "(\u0399\u03b1\u03bd\u03bf\u03c5\u03ac\u03c1\u03b9\u03bf\u03c2 2020) \U0001f44d\U0001f3fd (\u03b9 (\u1fbe",
        [
            "(",
            "\u0399\u03b1\u03bd\u03bf\u03c5\u03ac\u03c1\u03b9\u03bf\u03c2",
            "2020",
            ")",
            "\U0001f44d\U0001f3fd",
            "(",
            "\u03b9",
            "(",
            "\u03b9",
        ],
    ),
    (
        "Unicode 14.0 on any Python: a character assigned since is an unassigned code point (a symbol and a starter)",
        "a\U00011f04b \U0001e4f1\U0001e4f2 a\U00013439b a\U00011f42\u0301",
        ["a", "\U00011f04", "b", "\U0001e4f1", "\U0001e4f2", "a", "\U00013439", "b", "a", "\U00011f42\u0301"],
    ),
    ("an empty line has no word", "", []),
    ("a line of spaces and invisible characters has no word", " \t\u200e\x00\u200b \u0301", []),
]
# A batch of lines of mixed lengths, empty ones included: padded on the right to the longest, rows of 0, mask 0.
BATCH = ["Hi !", "", "The word's end, don't they'll?", "\u200e", "e\u0301cole"]

_ABOUT = (
    "ELMo's text front end (modeling_elmo/text_elmo.py), case by case: each raw line, its words (the split rule) and "
    "input_ids, one row of max_characters_per_token ids per word (the character-id rule); then one batch of lines, "
    "padded: input_ids [batch, words, max_characters_per_token] and attention_mask [batch, words]. docs/onnx.md "
    "states the rules. Strings are JSON escapes of UTF-16: lines with a lone surrogate (a \\ud800 escape alone) are "
    "for languages whose strings hold one (JavaScript, Java, C#); a UTF-8 language skips them (rule 'a lone "
    "surrogate is dropped'). Written by tests/helpers/text_conformance.py."
)


def _check_words(split, rule: str, line: str, words: list[str]) -> None:
    if split(line) != words:
        raise AssertionError(f"the case {rule!r}: {line!r} splits into {split(line)!r}, the case says {words!r}")


def conformance_text() -> str:
    """The conformance file's text: JSON, one case a line, ASCII only."""
    encoder = ElmoTextEncoder()
    cases = []
    for rule, line, words in CASES:
        _check_words(encoder.split, rule, line, words)
        ids = encoder.encode_words([words])["input_ids"][0].tolist()
        cases.append({"rule": rule, "line": line, "words": words, "input_ids": ids})
    batch = encoder.encode_text(BATCH)
    header = {
        "about": _ABOUT,
        "unicode_version": UNICODE_VERSION,
        "max_characters_per_token": encoder.max_characters_per_token,
    }
    lines = [f" {json.dumps(key)}: {json.dumps(value)}," for key, value in header.items()]
    lines.append(' "cases": [')
    lines.extend(f"  {json.dumps(case, separators=(',', ':'))}," for case in cases)
    lines[-1] = lines[-1].rstrip(",")
    lines.append(" ],")
    batch_case = {key: value.tolist() for key, value in batch.items()}
    lines.append(f' "batch": {json.dumps({"lines": BATCH, **batch_case}, separators=(",", ":"))}')
    return "{\n" + "\n".join(lines) + "\n}\n"


def main() -> None:
    """Write the conformance file (through a temporary file and a rename)."""
    text = conformance_text()
    write_through_rename(CONFORMANCE_FILE, text, "ascii")
    print(f"wrote {CONFORMANCE_FILE} ({len(text.encode())} bytes, {len(CASES)} cases)")


if __name__ == "__main__":
    main()
