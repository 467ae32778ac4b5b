"""ELMo's text front end: raw text -> words -> one row of character ids per word, on numpy alone.

One self-contained file (the standard library and numpy; no torch, no transformers, no relative import), the one
home of the rules that turn text into ELMo's inputs, so that it can be copied alone beside an exported graph (an
ONNX folder, a Triton python-backend model) and a client needs nothing else:

- the word splitter (`split_words`): PTB-like, NFC, invisible characters out, never inside a grapheme cluster, by
  Unicode 14.0's character classes on every Python (a table of them, written in by tests/helpers/unicode_table.py);
- the character-id rule (`word_to_char_ids`, batched `words_to_char_ids`): bilm-tf's and AllenNLP's UTF-8 bytes,
  and ELMoForManyLangs' code points (`word_to_code_point_ids`, `words_to_code_point_ids`);
- the sentence-marker words and their character ids (`BOS_WORD`, `EOS_WORD`, `BILM_TF_CHAR_IDS`);
- a bounded cache of the ids of the words met last (`WordCache`);
- `ElmoTextEncoder`: raw lines or words -> `input_ids` (batch, words, chars) and `attention_mask` (batch, words);
  its `padded_ids` is the one path from words to padded ids, `ElmoTokenizer`'s too (tokenization_elmo.py holds an
  encoder and adds transformers' side of the call: truncation, padding strategies, tensors).

The split rule, stated for clients in other languages, is `SPLIT_RULE` (docs/onnx.md and an exported folder's page
state it in its words); the conformance file text_elmo_conformance.json holds raw lines with their words, ids and
mask, one case per rule and per reading of it that clients took two ways.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

__all__ = [
    "BILM_TF_CHAR_IDS",
    "BILM_TF_SPECIAL_WORDS",
    "BILM_TF_SPECIAL_WORD_IDS",
    "BOS_WORD",
    "CODE_POINT_SPECIAL_CHARS",
    "DEFAULT_WORD_CACHE_SIZE",
    "EOS_WORD",
    "MAX_CHARACTERS_PER_TOKEN",
    "SPLIT_RULE",
    "UNICODE_VERSION",
    "UNK_WORD",
    "VOCABULARY_FILE",
    "WORD_VOCAB_SPECIAL_WORDS",
    "ElmoTextEncoder",
    "WordCache",
    "all_str",
    "checked_max_characters_per_token",
    "framed_char_ids",
    "split_words",
    "word_to_char_ids",
    "word_to_code_point_ids",
    "words_to_char_ids",
    "words_to_code_point_ids",
]

# ---------------------------------------------------------------------------------------------------------------
# The special words and characters
# ---------------------------------------------------------------------------------------------------------------

BOS_WORD, EOS_WORD, UNK_WORD = "<S>", "</S>", "<UNK>"
# bilm-tf's word vocabularies (the softmax's rows) start with these three words, ids 0, 1, 2.
BILM_TF_SPECIAL_WORDS = (BOS_WORD, EOS_WORD, UNK_WORD)
BILM_TF_SPECIAL_WORD_IDS = tuple(range(len(BILM_TF_SPECIAL_WORDS)))
# Where a language-model folder keeps such a vocabulary, the words of its softmax rows, one per line: the one owner
# of the name (the pipelines, the conversions and the training runs import it).
VOCABULARY_FILE = "vocab.txt"
# The character ids of bilm-tf and AllenNLP beyond a byte's (1-256: the byte + 1; 0 is "no word here"): the
# sentence markers' characters, the begin- and end-of-word marks and the padding after a word's end.
BILM_TF_CHAR_IDS = {"bos": 257, "eos": 258, "bow": 259, "eow": 260, "pad": 261}
# The widths of a word's row of character ids that the package takes (`max_characters_per_token`): the frame and at
# least one character, and at most 1024 ids, ample for any model (bilm-tf's, AllenNLP's and ELMoForManyLangs' are
# 50): wider, a word's row is memory for nothing (the word cache holds 16,384 rows: 128 MiB at 1024), and a width
# such as 10**9 would ask numpy for gigabytes at the first word. The one owner of the rule: ElmoConfig,
# ElmoTokenizer and ElmoTextEncoder check the field against it.
MAX_CHARACTERS_PER_TOKEN = range(3, 1025)


def checked_max_characters_per_token(value: object, where: str = "") -> int:
    """`value` if it is an int in `MAX_CHARACTERS_PER_TOKEN`; else a ValueError of one line, led by `where` (a file
    or a class: "tokenizer_config.json: ")."""
    if isinstance(value, bool) or not isinstance(value, int) or value not in MAX_CHARACTERS_PER_TOKEN:
        limits = MAX_CHARACTERS_PER_TOKEN
        raise ValueError(
            f"{where}max_characters_per_token must be an int from {limits.start} to {limits.stop - 1}, got {value!r}"
        )
    return value


# ---------------------------------------------------------------------------------------------------------------
# The word splitter
# ---------------------------------------------------------------------------------------------------------------

# The split reads the character classes of one Unicode version, 14.0, from the table below, never from the running
# Python's `unicodedata`, `re` (`\w`, `\d`, `\b`) or `str` methods, which follow that Python's own version (3.11:
# 14.0, 3.12: 15.0, 3.13: 15.1): a character assigned since (Kawi, U+13439, Nag Mundari) splits as Python 3.11
# splits it, on every Python. What the split still asks the running Python is stable across versions, and
# tests/model/test_unicode_table.py holds it on each Python the tests run on: `str.split()`'s white space (the
# table's `_SPACES`), `str.isprintable()` being False on every character step 1 drops, NFC on characters assigned
# in 14.0 (Unicode's normalization stability policy; `_nfc` keeps the others out of it), and which characters the
# clitics' case-insensitive letters match.

# BEGIN the Unicode property table (Unicode 14.0.0), written by tests/helpers/unicode_table.py: do not edit by hand.
# Each class is a str of comma-separated hexadecimal ranges of code points, ascending.
UNICODE_VERSION = "14.0.0"
# str.isalnum() but not str.isdecimal(): letters (L*) and numerals (No, Nl, ...)
_LETTERS = (
    "41-5a,61-7a,aa,b2-b3,b5,b9-ba,bc-be,c0-d6,d8-f6,f8-2c1,2c6-2d1,2e0-2e4,2ec,2ee,370-374,376-377,37a-37d,37f,"
    "386,388-38a,38c,38e-3a1,3a3-3f5,3f7-481,48a-52f,531-556,559,560-588,5d0-5ea,5ef-5f2,620-64a,66e-66f,671-6d3,"
    "6d5,6e5-6e6,6ee-6ef,6fa-6fc,6ff,710,712-72f,74d-7a5,7b1,7ca-7ea,7f4-7f5,7fa,800-815,81a,824,828,840-858,"
    "860-86a,870-887,889-88e,8a0-8c9,904-939,93d,950,958-961,971-980,985-98c,98f-990,993-9a8,9aa-9b0,9b2,9b6-9b9,"
    "9bd,9ce,9dc-9dd,9df-9e1,9f0-9f1,9f4-9f9,9fc,a05-a0a,a0f-a10,a13-a28,a2a-a30,a32-a33,a35-a36,a38-a39,a59-a5c,"
    "a5e,a72-a74,a85-a8d,a8f-a91,a93-aa8,aaa-ab0,ab2-ab3,ab5-ab9,abd,ad0,ae0-ae1,af9,b05-b0c,b0f-b10,b13-b28,"
    "b2a-b30,b32-b33,b35-b39,b3d,b5c-b5d,b5f-b61,b71-b77,b83,b85-b8a,b8e-b90,b92-b95,b99-b9a,b9c,b9e-b9f,ba3-ba4,"
    "ba8-baa,bae-bb9,bd0,bf0-bf2,c05-c0c,c0e-c10,c12-c28,c2a-c39,c3d,c58-c5a,c5d,c60-c61,c78-c7e,c80,c85-c8c,"
    "c8e-c90,c92-ca8,caa-cb3,cb5-cb9,cbd,cdd-cde,ce0-ce1,cf1-cf2,d04-d0c,d0e-d10,d12-d3a,d3d,d4e,d54-d56,d58-d61,"
    "d70-d78,d7a-d7f,d85-d96,d9a-db1,db3-dbb,dbd,dc0-dc6,e01-e30,e32-e33,e40-e46,e81-e82,e84,e86-e8a,e8c-ea3,ea5,"
    "ea7-eb0,eb2-eb3,ebd,ec0-ec4,ec6,edc-edf,f00,f2a-f33,f40-f47,f49-f6c,f88-f8c,1000-102a,103f,1050-1055,"
    "105a-105d,1061,1065-1066,106e-1070,1075-1081,108e,10a0-10c5,10c7,10cd,10d0-10fa,10fc-1248,124a-124d,1250-1256,"
    "1258,125a-125d,1260-1288,128a-128d,1290-12b0,12b2-12b5,12b8-12be,12c0,12c2-12c5,12c8-12d6,12d8-1310,1312-1315,"
    "1318-135a,1369-137c,1380-138f,13a0-13f5,13f8-13fd,1401-166c,166f-167f,1681-169a,16a0-16ea,16ee-16f8,1700-1711,"
    "171f-1731,1740-1751,1760-176c,176e-1770,1780-17b3,17d7,17dc,17f0-17f9,1820-1878,1880-1884,1887-18a8,18aa,"
    "18b0-18f5,1900-191e,1950-196d,1970-1974,1980-19ab,19b0-19c9,19da,1a00-1a16,1a20-1a54,1aa7,1b05-1b33,1b45-1b4c,"
    "1b83-1ba0,1bae-1baf,1bba-1be5,1c00-1c23,1c4d-1c4f,1c5a-1c7d,1c80-1c88,1c90-1cba,1cbd-1cbf,1ce9-1cec,1cee-1cf3,"
    "1cf5-1cf6,1cfa,1d00-1dbf,1e00-1f15,1f18-1f1d,1f20-1f45,1f48-1f4d,1f50-1f57,1f59,1f5b,1f5d,1f5f-1f7d,1f80-1fb4,"
    "1fb6-1fbc,1fbe,1fc2-1fc4,1fc6-1fcc,1fd0-1fd3,1fd6-1fdb,1fe0-1fec,1ff2-1ff4,1ff6-1ffc,2070-2071,2074-2079,"
    "207f-2089,2090-209c,2102,2107,210a-2113,2115,2119-211d,2124,2126,2128,212a-212d,212f-2139,213c-213f,2145-2149,"
    "214e,2150-2189,2460-249b,24ea-24ff,2776-2793,2c00-2ce4,2ceb-2cee,2cf2-2cf3,2cfd,2d00-2d25,2d27,2d2d,2d30-2d67,"
    "2d6f,2d80-2d96,2da0-2da6,2da8-2dae,2db0-2db6,2db8-2dbe,2dc0-2dc6,2dc8-2dce,2dd0-2dd6,2dd8-2dde,2e2f,3005-3007,"
    "3021-3029,3031-3035,3038-303c,3041-3096,309d-309f,30a1-30fa,30fc-30ff,3105-312f,3131-318e,3192-3195,31a0-31bf,"
    "31f0-31ff,3220-3229,3248-324f,3251-325f,3280-3289,32b1-32bf,3400-4dbf,4e00-a48c,a4d0-a4fd,a500-a60c,a610-a61f,"
    "a62a-a62b,a640-a66e,a67f-a69d,a6a0-a6ef,a717-a71f,a722-a788,a78b-a7ca,a7d0-a7d1,a7d3,a7d5-a7d9,a7f2-a801,"
    "a803-a805,a807-a80a,a80c-a822,a830-a835,a840-a873,a882-a8b3,a8f2-a8f7,a8fb,a8fd-a8fe,a90a-a925,a930-a946,"
    "a960-a97c,a984-a9b2,a9cf,a9e0-a9e4,a9e6-a9ef,a9fa-a9fe,aa00-aa28,aa40-aa42,aa44-aa4b,aa60-aa76,aa7a,aa7e-aaaf,"
    "aab1,aab5-aab6,aab9-aabd,aac0,aac2,aadb-aadd,aae0-aaea,aaf2-aaf4,ab01-ab06,ab09-ab0e,ab11-ab16,ab20-ab26,"
    "ab28-ab2e,ab30-ab5a,ab5c-ab69,ab70-abe2,ac00-d7a3,d7b0-d7c6,d7cb-d7fb,f900-fa6d,fa70-fad9,fb00-fb06,fb13-fb17,"
    "fb1d,fb1f-fb28,fb2a-fb36,fb38-fb3c,fb3e,fb40-fb41,fb43-fb44,fb46-fbb1,fbd3-fd3d,fd50-fd8f,fd92-fdc7,fdf0-fdfb,"
    "fe70-fe74,fe76-fefc,ff21-ff3a,ff41-ff5a,ff66-ffbe,ffc2-ffc7,ffca-ffcf,ffd2-ffd7,ffda-ffdc,10000-1000b,"
    "1000d-10026,10028-1003a,1003c-1003d,1003f-1004d,10050-1005d,10080-100fa,10107-10133,10140-10178,1018a-1018b,"
    "10280-1029c,102a0-102d0,102e1-102fb,10300-10323,1032d-1034a,10350-10375,10380-1039d,103a0-103c3,103c8-103cf,"
    "103d1-103d5,10400-1049d,104b0-104d3,104d8-104fb,10500-10527,10530-10563,10570-1057a,1057c-1058a,1058c-10592,"
    "10594-10595,10597-105a1,105a3-105b1,105b3-105b9,105bb-105bc,10600-10736,10740-10755,10760-10767,10780-10785,"
    "10787-107b0,107b2-107ba,10800-10805,10808,1080a-10835,10837-10838,1083c,1083f-10855,10858-10876,10879-1089e,"
    "108a7-108af,108e0-108f2,108f4-108f5,108fb-1091b,10920-10939,10980-109b7,109bc-109cf,109d2-10a00,10a10-10a13,"
    "10a15-10a17,10a19-10a35,10a40-10a48,10a60-10a7e,10a80-10a9f,10ac0-10ac7,10ac9-10ae4,10aeb-10aef,10b00-10b35,"
    "10b40-10b55,10b58-10b72,10b78-10b91,10ba9-10baf,10c00-10c48,10c80-10cb2,10cc0-10cf2,10cfa-10d23,10e60-10e7e,"
    "10e80-10ea9,10eb0-10eb1,10f00-10f27,10f30-10f45,10f51-10f54,10f70-10f81,10fb0-10fcb,10fe0-10ff6,11003-11037,"
    "11052-11065,11071-11072,11075,11083-110af,110d0-110e8,11103-11126,11144,11147,11150-11172,11176,11183-111b2,"
    "111c1-111c4,111da,111dc,111e1-111f4,11200-11211,11213-1122b,11280-11286,11288,1128a-1128d,1128f-1129d,"
    "1129f-112a8,112b0-112de,11305-1130c,1130f-11310,11313-11328,1132a-11330,11332-11333,11335-11339,1133d,11350,"
    "1135d-11361,11400-11434,11447-1144a,1145f-11461,11480-114af,114c4-114c5,114c7,11580-115ae,115d8-115db,"
    "11600-1162f,11644,11680-116aa,116b8,11700-1171a,1173a-1173b,11740-11746,11800-1182b,118a0-118df,118ea-118f2,"
    "118ff-11906,11909,1190c-11913,11915-11916,11918-1192f,1193f,11941,119a0-119a7,119aa-119d0,119e1,119e3,11a00,"
    "11a0b-11a32,11a3a,11a50,11a5c-11a89,11a9d,11ab0-11af8,11c00-11c08,11c0a-11c2e,11c40,11c5a-11c6c,11c72-11c8f,"
    "11d00-11d06,11d08-11d09,11d0b-11d30,11d46,11d60-11d65,11d67-11d68,11d6a-11d89,11d98,11ee0-11ef2,11fb0,"
    "11fc0-11fd4,12000-12399,12400-1246e,12480-12543,12f90-12ff0,13000-1342e,14400-14646,16800-16a38,16a40-16a5e,"
    "16a70-16abe,16ad0-16aed,16b00-16b2f,16b40-16b43,16b5b-16b61,16b63-16b77,16b7d-16b8f,16e40-16e96,16f00-16f4a,"
    "16f50,16f93-16f9f,16fe0-16fe1,16fe3,17000-187f7,18800-18cd5,18d00-18d08,1aff0-1aff3,1aff5-1affb,1affd-1affe,"
    "1b000-1b122,1b150-1b152,1b164-1b167,1b170-1b2fb,1bc00-1bc6a,1bc70-1bc7c,1bc80-1bc88,1bc90-1bc99,1d2e0-1d2f3,"
    "1d360-1d378,1d400-1d454,1d456-1d49c,1d49e-1d49f,1d4a2,1d4a5-1d4a6,1d4a9-1d4ac,1d4ae-1d4b9,1d4bb,1d4bd-1d4c3,"
    "1d4c5-1d505,1d507-1d50a,1d50d-1d514,1d516-1d51c,1d51e-1d539,1d53b-1d53e,1d540-1d544,1d546,1d54a-1d550,"
    "1d552-1d6a5,1d6a8-1d6c0,1d6c2-1d6da,1d6dc-1d6fa,1d6fc-1d714,1d716-1d734,1d736-1d74e,1d750-1d76e,1d770-1d788,"
    "1d78a-1d7a8,1d7aa-1d7c2,1d7c4-1d7cb,1df00-1df1e,1e100-1e12c,1e137-1e13d,1e14e,1e290-1e2ad,1e2c0-1e2eb,"
    "1e7e0-1e7e6,1e7e8-1e7eb,1e7ed-1e7ee,1e7f0-1e7fe,1e800-1e8c4,1e8c7-1e8cf,1e900-1e943,1e94b,1ec71-1ecab,"
    "1ecad-1ecaf,1ecb1-1ecb4,1ed01-1ed2d,1ed2f-1ed3d,1ee00-1ee03,1ee05-1ee1f,1ee21-1ee22,1ee24,1ee27,1ee29-1ee32,"
    "1ee34-1ee37,1ee39,1ee3b,1ee42,1ee47,1ee49,1ee4b,1ee4d-1ee4f,1ee51-1ee52,1ee54,1ee57,1ee59,1ee5b,1ee5d,1ee5f,"
    "1ee61-1ee62,1ee64,1ee67-1ee6a,1ee6c-1ee72,1ee74-1ee77,1ee79-1ee7c,1ee7e,1ee80-1ee89,1ee8b-1ee9b,1eea1-1eea3,"
    "1eea5-1eea9,1eeab-1eebb,1f100-1f10c,20000-2a6df,2a700-2b738,2b740-2b81d,2b820-2cea1,2ceb0-2ebe0,2f800-2fa1d,"
    "30000-3134a"
)
# str.isdecimal(): the decimal digits (Nd)
_DIGITS = (
    "30-39,660-669,6f0-6f9,7c0-7c9,966-96f,9e6-9ef,a66-a6f,ae6-aef,b66-b6f,be6-bef,c66-c6f,ce6-cef,d66-d6f,de6-def,"
    "e50-e59,ed0-ed9,f20-f29,1040-1049,1090-1099,17e0-17e9,1810-1819,1946-194f,19d0-19d9,1a80-1a89,1a90-1a99,"
    "1b50-1b59,1bb0-1bb9,1c40-1c49,1c50-1c59,a620-a629,a8d0-a8d9,a900-a909,a9d0-a9d9,a9f0-a9f9,aa50-aa59,abf0-abf9,"
    "ff10-ff19,104a0-104a9,10d30-10d39,11066-1106f,110f0-110f9,11136-1113f,111d0-111d9,112f0-112f9,11450-11459,"
    "114d0-114d9,11650-11659,116c0-116c9,11730-11739,118e0-118e9,11950-11959,11c50-11c59,11d50-11d59,11da0-11da9,"
    "16a60-16a69,16ac0-16ac9,16b50-16b59,1d7ce-1d7ff,1e140-1e149,1e2f0-1e2f9,1e950-1e959,1fbf0-1fbf9"
)
# str.isspace(): white space
_SPACES = "9-d,1c-20,85,a0,1680,2000-200a,2028-2029,202f,205f,3000"
# the combining marks (Mn, Mc, Me)
_MARKS = (
    "300-36f,483-489,591-5bd,5bf,5c1-5c2,5c4-5c5,5c7,610-61a,64b-65f,670,6d6-6dc,6df-6e4,6e7-6e8,6ea-6ed,711,"
    "730-74a,7a6-7b0,7eb-7f3,7fd,816-819,81b-823,825-827,829-82d,859-85b,898-89f,8ca-8e1,8e3-903,93a-93c,93e-94f,"
    "951-957,962-963,981-983,9bc,9be-9c4,9c7-9c8,9cb-9cd,9d7,9e2-9e3,9fe,a01-a03,a3c,a3e-a42,a47-a48,a4b-a4d,a51,"
    "a70-a71,a75,a81-a83,abc,abe-ac5,ac7-ac9,acb-acd,ae2-ae3,afa-aff,b01-b03,b3c,b3e-b44,b47-b48,b4b-b4d,b55-b57,"
    "b62-b63,b82,bbe-bc2,bc6-bc8,bca-bcd,bd7,c00-c04,c3c,c3e-c44,c46-c48,c4a-c4d,c55-c56,c62-c63,c81-c83,cbc,"
    "cbe-cc4,cc6-cc8,cca-ccd,cd5-cd6,ce2-ce3,d00-d03,d3b-d3c,d3e-d44,d46-d48,d4a-d4d,d57,d62-d63,d81-d83,dca,"
    "dcf-dd4,dd6,dd8-ddf,df2-df3,e31,e34-e3a,e47-e4e,eb1,eb4-ebc,ec8-ecd,f18-f19,f35,f37,f39,f3e-f3f,f71-f84,"
    "f86-f87,f8d-f97,f99-fbc,fc6,102b-103e,1056-1059,105e-1060,1062-1064,1067-106d,1071-1074,1082-108d,108f,"
    "109a-109d,135d-135f,1712-1715,1732-1734,1752-1753,1772-1773,17b4-17d3,17dd,180b-180d,180f,1885-1886,18a9,"
    "1920-192b,1930-193b,1a17-1a1b,1a55-1a5e,1a60-1a7c,1a7f,1ab0-1ace,1b00-1b04,1b34-1b44,1b6b-1b73,1b80-1b82,"
    "1ba1-1bad,1be6-1bf3,1c24-1c37,1cd0-1cd2,1cd4-1ce8,1ced,1cf4,1cf7-1cf9,1dc0-1dff,20d0-20f0,2cef-2cf1,2d7f,"
    "2de0-2dff,302a-302f,3099-309a,a66f-a672,a674-a67d,a69e-a69f,a6f0-a6f1,a802,a806,a80b,a823-a827,a82c,a880-a881,"
    "a8b4-a8c5,a8e0-a8f1,a8ff,a926-a92d,a947-a953,a980-a983,a9b3-a9c0,a9e5,aa29-aa36,aa43,aa4c-aa4d,aa7b-aa7d,aab0,"
    "aab2-aab4,aab7-aab8,aabe-aabf,aac1,aaeb-aaef,aaf5-aaf6,abe3-abea,abec-abed,fb1e,fe00-fe0f,fe20-fe2f,101fd,"
    "102e0,10376-1037a,10a01-10a03,10a05-10a06,10a0c-10a0f,10a38-10a3a,10a3f,10ae5-10ae6,10d24-10d27,10eab-10eac,"
    "10f46-10f50,10f82-10f85,11000-11002,11038-11046,11070,11073-11074,1107f-11082,110b0-110ba,110c2,11100-11102,"
    "11127-11134,11145-11146,11173,11180-11182,111b3-111c0,111c9-111cc,111ce-111cf,1122c-11237,1123e,112df-112ea,"
    "11300-11303,1133b-1133c,1133e-11344,11347-11348,1134b-1134d,11357,11362-11363,11366-1136c,11370-11374,"
    "11435-11446,1145e,114b0-114c3,115af-115b5,115b8-115c0,115dc-115dd,11630-11640,116ab-116b7,1171d-1172b,"
    "1182c-1183a,11930-11935,11937-11938,1193b-1193e,11940,11942-11943,119d1-119d7,119da-119e0,119e4,11a01-11a0a,"
    "11a33-11a39,11a3b-11a3e,11a47,11a51-11a5b,11a8a-11a99,11c2f-11c36,11c38-11c3f,11c92-11ca7,11ca9-11cb6,"
    "11d31-11d36,11d3a,11d3c-11d3d,11d3f-11d45,11d47,11d8a-11d8e,11d90-11d91,11d93-11d97,11ef3-11ef6,16af0-16af4,"
    "16b30-16b36,16f4f,16f51-16f87,16f8f-16f92,16fe4,16ff0-16ff1,1bc9d-1bc9e,1cf00-1cf2d,1cf30-1cf46,1d165-1d169,"
    "1d16d-1d172,1d17b-1d182,1d185-1d18b,1d1aa-1d1ad,1d242-1d244,1da00-1da36,1da3b-1da6c,1da75,1da84,1da9b-1da9f,"
    "1daa1-1daaf,1e000-1e006,1e008-1e018,1e01b-1e021,1e023-1e024,1e026-1e02a,1e130-1e136,1e2ae,1e2ec-1e2ef,"
    "1e8d0-1e8d6,1e944-1e94a,e0100-e01ef"
)
# the format characters (Cf)
_FORMATS = (
    "ad,600-605,61c,6dd,70f,890-891,8e2,180e,200b-200f,202a-202e,2060-2064,2066-206f,feff,fff9-fffb,110bd,110cd,"
    "13430-13438,1bca0-1bca3,1d173-1d17a,e0001,e0020-e007f"
)
# the unassigned code points (Cn)
_UNASSIGNED = (
    "378-379,380-383,38b,38d,3a2,530,557-558,58b-58c,590,5c8-5cf,5eb-5ee,5f5-5ff,70e,74b-74c,7b2-7bf,7fb-7fc,"
    "82e-82f,83f,85c-85d,85f,86b-86f,88f,892-897,984,98d-98e,991-992,9a9,9b1,9b3-9b5,9ba-9bb,9c5-9c6,9c9-9ca,"
    "9cf-9d6,9d8-9db,9de,9e4-9e5,9ff-a00,a04,a0b-a0e,a11-a12,a29,a31,a34,a37,a3a-a3b,a3d,a43-a46,a49-a4a,a4e-a50,"
    "a52-a58,a5d,a5f-a65,a77-a80,a84,a8e,a92,aa9,ab1,ab4,aba-abb,ac6,aca,ace-acf,ad1-adf,ae4-ae5,af2-af8,b00,b04,"
    "b0d-b0e,b11-b12,b29,b31,b34,b3a-b3b,b45-b46,b49-b4a,b4e-b54,b58-b5b,b5e,b64-b65,b78-b81,b84,b8b-b8d,b91,"
    "b96-b98,b9b,b9d,ba0-ba2,ba5-ba7,bab-bad,bba-bbd,bc3-bc5,bc9,bce-bcf,bd1-bd6,bd8-be5,bfb-bff,c0d,c11,c29,"
    "c3a-c3b,c45,c49,c4e-c54,c57,c5b-c5c,c5e-c5f,c64-c65,c70-c76,c8d,c91,ca9,cb4,cba-cbb,cc5,cc9,cce-cd4,cd7-cdc,"
    "cdf,ce4-ce5,cf0,cf3-cff,d0d,d11,d45,d49,d50-d53,d64-d65,d80,d84,d97-d99,db2,dbc,dbe-dbf,dc7-dc9,dcb-dce,dd5,"
    "dd7,de0-de5,df0-df1,df5-e00,e3b-e3e,e5c-e80,e83,e85,e8b,ea4,ea6,ebe-ebf,ec5,ec7,ece-ecf,eda-edb,ee0-eff,f48,"
    "f6d-f70,f98,fbd,fcd,fdb-fff,10c6,10c8-10cc,10ce-10cf,1249,124e-124f,1257,1259,125e-125f,1289,128e-128f,12b1,"
    "12b6-12b7,12bf,12c1,12c6-12c7,12d7,1311,1316-1317,135b-135c,137d-137f,139a-139f,13f6-13f7,13fe-13ff,169d-169f,"
    "16f9-16ff,1716-171e,1737-173f,1754-175f,176d,1771,1774-177f,17de-17df,17ea-17ef,17fa-17ff,181a-181f,1879-187f,"
    "18ab-18af,18f6-18ff,191f,192c-192f,193c-193f,1941-1943,196e-196f,1975-197f,19ac-19af,19ca-19cf,19db-19dd,"
    "1a1c-1a1d,1a5f,1a7d-1a7e,1a8a-1a8f,1a9a-1a9f,1aae-1aaf,1acf-1aff,1b4d-1b4f,1b7f,1bf4-1bfb,1c38-1c3a,1c4a-1c4c,"
    "1c89-1c8f,1cbb-1cbc,1cc8-1ccf,1cfb-1cff,1f16-1f17,1f1e-1f1f,1f46-1f47,1f4e-1f4f,1f58,1f5a,1f5c,1f5e,1f7e-1f7f,"
    "1fb5,1fc5,1fd4-1fd5,1fdc,1ff0-1ff1,1ff5,1fff,2065,2072-2073,208f,209d-209f,20c1-20cf,20f1-20ff,218c-218f,"
    "2427-243f,244b-245f,2b74-2b75,2b96,2cf4-2cf8,2d26,2d28-2d2c,2d2e-2d2f,2d68-2d6e,2d71-2d7e,2d97-2d9f,2da7,2daf,"
    "2db7,2dbf,2dc7,2dcf,2dd7,2ddf,2e5e-2e7f,2e9a,2ef4-2eff,2fd6-2fef,2ffc-2fff,3040,3097-3098,3100-3104,3130,318f,"
    "31e4-31ef,321f,a48d-a48f,a4c7-a4cf,a62c-a63f,a6f8-a6ff,a7cb-a7cf,a7d2,a7d4,a7da-a7f1,a82d-a82f,a83a-a83f,"
    "a878-a87f,a8c6-a8cd,a8da-a8df,a954-a95e,a97d-a97f,a9ce,a9da-a9dd,a9ff,aa37-aa3f,aa4e-aa4f,aa5a-aa5b,aac3-aada,"
    "aaf7-ab00,ab07-ab08,ab0f-ab10,ab17-ab1f,ab27,ab2f,ab6c-ab6f,abee-abef,abfa-abff,d7a4-d7af,d7c7-d7ca,d7fc-d7ff,"
    "fa6e-fa6f,fada-faff,fb07-fb12,fb18-fb1c,fb37,fb3d,fb3f,fb42,fb45,fbc3-fbd2,fd90-fd91,fdc8-fdce,fdd0-fdef,"
    "fe1a-fe1f,fe53,fe67,fe6c-fe6f,fe75,fefd-fefe,ff00,ffbf-ffc1,ffc8-ffc9,ffd0-ffd1,ffd8-ffd9,ffdd-ffdf,ffe7,"
    "ffef-fff8,fffe-ffff,1000c,10027,1003b,1003e,1004e-1004f,1005e-1007f,100fb-100ff,10103-10106,10134-10136,1018f,"
    "1019d-1019f,101a1-101cf,101fe-1027f,1029d-1029f,102d1-102df,102fc-102ff,10324-1032c,1034b-1034f,1037b-1037f,"
    "1039e,103c4-103c7,103d6-103ff,1049e-1049f,104aa-104af,104d4-104d7,104fc-104ff,10528-1052f,10564-1056e,1057b,"
    "1058b,10593,10596,105a2,105b2,105ba,105bd-105ff,10737-1073f,10756-1075f,10768-1077f,10786,107b1,107bb-107ff,"
    "10806-10807,10809,10836,10839-1083b,1083d-1083e,10856,1089f-108a6,108b0-108df,108f3,108f6-108fa,1091c-1091e,"
    "1093a-1093e,10940-1097f,109b8-109bb,109d0-109d1,10a04,10a07-10a0b,10a14,10a18,10a36-10a37,10a3b-10a3e,"
    "10a49-10a4f,10a59-10a5f,10aa0-10abf,10ae7-10aea,10af7-10aff,10b36-10b38,10b56-10b57,10b73-10b77,10b92-10b98,"
    "10b9d-10ba8,10bb0-10bff,10c49-10c7f,10cb3-10cbf,10cf3-10cf9,10d28-10d2f,10d3a-10e5f,10e7f,10eaa,10eae-10eaf,"
    "10eb2-10eff,10f28-10f2f,10f5a-10f6f,10f8a-10faf,10fcc-10fdf,10ff7-10fff,1104e-11051,11076-1107e,110c3-110cc,"
    "110ce-110cf,110e9-110ef,110fa-110ff,11135,11148-1114f,11177-1117f,111e0,111f5-111ff,11212,1123f-1127f,11287,"
    "11289,1128e,1129e,112aa-112af,112eb-112ef,112fa-112ff,11304,1130d-1130e,11311-11312,11329,11331,11334,1133a,"
    "11345-11346,11349-1134a,1134e-1134f,11351-11356,11358-1135c,11364-11365,1136d-1136f,11375-113ff,1145c,"
    "11462-1147f,114c8-114cf,114da-1157f,115b6-115b7,115de-115ff,11645-1164f,1165a-1165f,1166d-1167f,116ba-116bf,"
    "116ca-116ff,1171b-1171c,1172c-1172f,11747-117ff,1183c-1189f,118f3-118fe,11907-11908,1190a-1190b,11914,11917,"
    "11936,11939-1193a,11947-1194f,1195a-1199f,119a8-119a9,119d8-119d9,119e5-119ff,11a48-11a4f,11aa3-11aaf,"
    "11af9-11bff,11c09,11c37,11c46-11c4f,11c6d-11c6f,11c90-11c91,11ca8,11cb7-11cff,11d07,11d0a,11d37-11d39,11d3b,"
    "11d3e,11d48-11d4f,11d5a-11d5f,11d66,11d69,11d8f,11d92,11d99-11d9f,11daa-11edf,11ef9-11faf,11fb1-11fbf,"
    "11ff2-11ffe,1239a-123ff,1246f,12475-1247f,12544-12f8f,12ff3-12fff,1342f,13439-143ff,14647-167ff,16a39-16a3f,"
    "16a5f,16a6a-16a6d,16abf,16aca-16acf,16aee-16aef,16af6-16aff,16b46-16b4f,16b5a,16b62,16b78-16b7c,16b90-16e3f,"
    "16e9b-16eff,16f4b-16f4e,16f88-16f8e,16fa0-16fdf,16fe5-16fef,16ff2-16fff,187f8-187ff,18cd6-18cff,18d09-1afef,"
    "1aff4,1affc,1afff,1b123-1b14f,1b153-1b163,1b168-1b16f,1b2fc-1bbff,1bc6b-1bc6f,1bc7d-1bc7f,1bc89-1bc8f,"
    "1bc9a-1bc9b,1bca4-1ceff,1cf2e-1cf2f,1cf47-1cf4f,1cfc4-1cfff,1d0f6-1d0ff,1d127-1d128,1d1eb-1d1ff,1d246-1d2df,"
    "1d2f4-1d2ff,1d357-1d35f,1d379-1d3ff,1d455,1d49d,1d4a0-1d4a1,1d4a3-1d4a4,1d4a7-1d4a8,1d4ad,1d4ba,1d4bc,1d4c4,"
    "1d506,1d50b-1d50c,1d515,1d51d,1d53a,1d53f,1d545,1d547-1d549,1d551,1d6a6-1d6a7,1d7cc-1d7cd,1da8c-1da9a,1daa0,"
    "1dab0-1deff,1df1f-1dfff,1e007,1e019-1e01a,1e022,1e025,1e02b-1e0ff,1e12d-1e12f,1e13e-1e13f,1e14a-1e14d,"
    "1e150-1e28f,1e2af-1e2bf,1e2fa-1e2fe,1e300-1e7df,1e7e7,1e7ec,1e7ef,1e7ff,1e8c5-1e8c6,1e8d7-1e8ff,1e94c-1e94f,"
    "1e95a-1e95d,1e960-1ec70,1ecb5-1ed00,1ed3e-1edff,1ee04,1ee20,1ee23,1ee25-1ee26,1ee28,1ee33,1ee38,1ee3a,"
    "1ee3c-1ee41,1ee43-1ee46,1ee48,1ee4a,1ee4c,1ee50,1ee53,1ee55-1ee56,1ee58,1ee5a,1ee5c,1ee5e,1ee60,1ee63,"
    "1ee65-1ee66,1ee6b,1ee73,1ee78,1ee7d,1ee7f,1ee8a,1ee9c-1eea0,1eea4,1eeaa,1eebc-1eeef,1eef2-1efff,1f02c-1f02f,"
    "1f094-1f09f,1f0af-1f0b0,1f0c0,1f0d0,1f0f6-1f0ff,1f1ae-1f1e5,1f203-1f20f,1f23c-1f23f,1f249-1f24f,1f252-1f25f,"
    "1f266-1f2ff,1f6d8-1f6dc,1f6ed-1f6ef,1f6fd-1f6ff,1f774-1f77f,1f7d9-1f7df,1f7ec-1f7ef,1f7f1-1f7ff,1f80c-1f80f,"
    "1f848-1f84f,1f85a-1f85f,1f888-1f88f,1f8ae-1f8af,1f8b2-1f8ff,1fa54-1fa5f,1fa6e-1fa6f,1fa75-1fa77,1fa7d-1fa7f,"
    "1fa87-1fa8f,1faad-1faaf,1fabb-1fabf,1fac6-1facf,1fada-1fadf,1fae8-1faef,1faf7-1faff,1fb93,1fbcb-1fbef,"
    "1fbfa-1ffff,2a6e0-2a6ff,2b739-2b73f,2b81e-2b81f,2cea2-2ceaf,2ebe1-2f7ff,2fa1e-2ffff,3134b-e0000,e0002-e001f,"
    "e0080-e00ff,e01f0-effff,ffffe-fffff,10fffe-10ffff"
)
# END the Unicode property table

_Spans = list[tuple[int, int]]


def _spans(*tables: str) -> _Spans:
    """The code points of the classes `tables` (each comma-separated hexadecimal ranges: "41-5a,aa") as (first, last)
    ranges, ascending."""
    spans = []
    for item in ",".join(tables).split(","):
        first, _, last = item.partition("-")
        spans.append((int(first, 16), int(last or first, 16)))
    return sorted(spans)


def _class(spans: _Spans) -> str:
    """A regular expression's character class of the code points `spans`."""
    return "[" + "".join(f"{re.escape(chr(first))}-{re.escape(chr(last))}" for first, last in spans) + "]"


_BMP_END = 0xFFFF


def _bmp_one_of(spans: _Spans) -> str:
    """One character of `spans`, in text without a character beyond the BMP (the common case: one fast table)."""
    return _class([(first, min(last, _BMP_END)) for first, last in spans if first <= _BMP_END])


def _one_of(spans: _Spans) -> str:
    """One character of `spans`, in any text. `re` looks a character beyond the BMP up range by range, through
    hundreds of them for a letter class: such a character is first checked against a few coarse ranges around
    them (the ranges merged across gaps of under 256), so that an emoji is turned away at once."""
    astral = [(max(first, _BMP_END + 1), last) for first, last in spans if last > _BMP_END]
    if not astral:
        return _bmp_one_of(spans)
    coarse = [astral[0]]
    for first, last in astral[1:]:
        if first - coarse[-1][1] < 256:
            coarse[-1] = (coarse[-1][0], last)
        else:
            coarse.append((first, last))
    return f"(?:{_bmp_one_of(spans)}|(?={_class(coarse)}){_class(astral)})"


_LETTER = _spans(_LETTERS)  # a letter of rule 1: a letter or a numeral (½, Ⅻ), not a decimal digit
_DIGIT = _spans(_DIGITS)
_WORD_CHARACTER = _spans(_LETTERS, _DIGITS, "5f")  # `\w` of Unicode 14.0: a letter, a numeral, a digit or "_"
_MARK = _spans(_MARKS)
# The zero-width non-joiner and joiner: kept where they join two characters of a word.
_JOINERS = "\u200c\u200d"
# What extends the character before it into one grapheme cluster (Unicode's Grapheme_Cluster_Break Extend,
# SpacingMark and ZWJ, near enough): the combining marks (Mn, Mc, Me: accents, the vowel signs of Indic scripts,
# variation selectors, the keycap), the zero-width non-joiner and joiner, the emoji skin-tone modifiers and the tag
# characters of flag sequences. Python's `re` has no `\X`, so that the pattern below attaches them to their base.
_EXTENDER = _spans(_MARKS, "200c-200d", "1f3fb-1f3ff", "e0020-e007f")

# Control and format characters (Unicode's Cc and Cf) are invisible: --tokenize made words of them ("wo\x00rd" was
# three words, a right-to-left mark one of them). None is a word or part of one, but for the characters that join
# a grapheme cluster. Each goes where a reader of the text expects it:
# - a control character other than whitespace (NUL, ESC, DEL, the C1 controls) separates words, as whitespace
#   does: it stands in no written word (a field separator, a byte of damage), and the letters on either side are
#   the words they were before it came in; joined, they would make a word that nobody wrote;
# - the zero-width space separates words: marking a word boundary without a visible space is its job (Thai, Khmer,
#   Burmese and web text);
# - every other format character is dropped: the bidirectional marks, embeddings, overrides and isolates, the
#   soft hyphen, the word joiner, a byte order mark inside the text, the Arabic number signs, tag characters
#   outside a flag: they change how text is shown or broken across lines, not what it says ("wo\u200erd" reads
#   "word");
# - kept: a zero-width joiner or non-joiner between two characters of a word (an emoji sequence, the Persian
#   "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"), and the tag characters of an emoji tag sequence: the
#   black flag, a region's tag letters and the cancel tag (England's, Scotland's and Wales's flags, the tag
#   sequences Unicode recommends, UTS #51), where they follow U+1F3F4 in the text as given (an invisible character
#   among them breaks the sequence: the tags are then dropped, each a format character).
# A lone surrogate (Cs: half of a UTF-16 pair, which a Python str can hold and no UTF-8 text can) is no character:
# dropped as a format character is, as the id rule drops it from a given word (it has no UTF-8 bytes).
# A combining mark (Mn, Mc, Me: an accent, a variation selector, an enclosing keycap) with nothing before it in its
# word to combine with (at the start of the text, after whitespace, a control character or a zero-width space) is
# no word: --tokenize made a word of a lone U+0301 or U+FE0F between spaces.
# How: the word pattern starts no word at a control, a zero-width space, a joiner or a mark (findall skips them),
# text beyond ASCII loses what is dropped (`_INVISIBLE`) before NFC, and `split_words` strips a joiner that ends a
# word. (No white space is left inside the chunks the pattern reads: `str.split` cut the text there.)
_NO_WORD = r"\x00-\x1f\x7f-\x9f\u200b"  # where no word is: the controls, the zero-width space
_TAG_SEQUENCE = "\U0001f3f4[\U000e0020-\U000e007e]+\U000e007f"


def _without(spans: _Spans, first: int, last: int) -> _Spans:
    """`spans` less the code points `first`..`last`."""
    kept = [(start, min(end, first - 1)) for start, end in spans if start < first]
    return kept + [(max(start, last + 1), end) for start, end in spans if end > last]


# Every format character but the zero-width space, non-joiner and joiner, and the surrogates.
_DROPPED = _without(_spans(_FORMATS, "d800-dfff"), 0x200B, 0x200D)
_INVISIBLE = re.compile(f"({_TAG_SEQUENCE})|{_one_of(_DROPPED)}")  # replaced by group 1: a tag sequence is kept
# A code point unassigned in Unicode 14.0, which Python 3.11's NFC leaves as it stands, between two starters.
_UNASSIGNED_CHARACTER = re.compile(f"({_one_of(_spans(_UNASSIGNED))})")


def _word_pattern(one_of: Callable[[_Spans], str], clusters: bool) -> re.Pattern:
    """PTB-like word splitting of raw text, tried left to right at each position, with `one_of(spans)` the
    expression of one character of a class. With `clusters`, each letter, word character, digit or other symbol is
    followed by the characters that extend it (the marks, the joiners, ...), and a mark where a word would start
    starts none (it is skipped, dropped); without, the text holds none of them. A symbol also takes the symbols
    that zero-width joiners attach to it (an emoji sequence: a family). A position where no word starts is skipped:
    a control character or a zero-width space separates words, and a joiner there is dropped.
    The clitics' letters are matched case-insensitively; a class never is (U+0345, a combining mark, folds to
    the Greek iota)."""
    extend = f"{one_of(_EXTENDER)}*" if clusters else ""
    letter, digits = f"(?:{one_of(_LETTER)}{extend})", f"(?:{one_of(_DIGIT)}{extend})+"
    word = f"(?:{one_of(_WORD_CHARACTER)}{extend})+"
    end = f"(?!{one_of(_WORD_CHARACTER)})"  # `\b` after a word character: no word character follows
    clitic = "(?i:s|re|ve|ll|d|m)"  # after an apostrophe
    base = f"(?!{one_of(_MARK)})[^{_NO_WORD}{_JOINERS}]" if clusters else f"[^{_NO_WORD}{_JOINERS}]"
    symbol = rf"(?:{base}{extend}(?:(?<=\u200d){base}{extend})*)"
    return re.compile(
        rf"""
        (?:{letter}\.){{2,}}            # abbreviations with inner periods: U.S., e.g.
      | {digits}(?:[.,:/]{digits})*     # numbers: 3.14, 1,000, 10:30, 1/2
      | {word}(?=(?i:n't){end})         # "do" of "don't" (the clitic follows as its own word)
      | (?i:n't){end}                   # negation clitic
      | '{clitic}{end}                  # clitics: 's 're 've 'll 'd 'm
      | {word}(?:-{word})*(?:'(?!{clitic}{end}){word}(?:-{word})*)*  # words; inner hyphens, apostrophes
      | \.\.\.|--                      # ellipsis, dash
      | [\U0001F1E6-\U0001F1FF]{{2}}     # a flag: two regional indicators
      | {symbol}                       # any other symbol is a word of its own
        """,
        re.VERBOSE,
    )


_CLUSTER_WORD_PATTERN = _word_pattern(_one_of, clusters=True)
# Most text holds no mark, joiner, flag or character beyond the BMP: the pattern without them splits it alike,
# 5-10 times faster.
_PLAIN_WORD_PATTERN = _word_pattern(_bmp_one_of, clusters=False)
_CLUSTERED = re.compile(f"{_bmp_one_of(_EXTENDER)}|[\U00010000-\U0010ffff]")


def _nfc(text: str) -> str:
    """`text` in Unicode 14.0's NFC, on any Python: a code point unassigned in 14.0 (a starter that composes with
    nothing there) is kept as it is, and the text between such code points is normalised, which Unicode's
    normalization stability policy makes the same in every later version."""
    pieces = _UNASSIGNED_CHARACTER.split(text)
    if len(pieces) == 1:
        return unicodedata.normalize("NFC", text)
    return "".join(piece if index % 2 else unicodedata.normalize("NFC", piece) for index, piece in enumerate(pieces))


# The split rule as a client in another language follows it, in Markdown: docs/onnx.md ("The split rule") and the
# page of an exported folder state it in these words (tests/model/test_tokenizer_front_end.py holds them to it).
SPLIT_RULE = """\
Raw text becomes words by these steps, in this order, with Unicode 14.0's character properties on every Python
(`text_elmo.py` carries them in a table: a newer Python's Unicode changes no word):

1. **Drop** the invisible characters that say nothing: every format character (general category `Cf`) but the
   zero-width space U+200B, the zero-width non-joiner U+200C and joiner U+200D (the bidirectional marks, the soft
   hyphen, the word joiner, U+FEFF inside a line, ...), and every lone surrogate (U+D800..U+DFFF); but keep an emoji
   tag sequence, U+1F3F4 then one or more of U+E0020..U+E007E then U+E007F, where its characters follow each other
   in the text as given (an invisible character among them breaks it: its tags are then dropped, as format
   characters). On ASCII text steps 1 and 2 change nothing.
2. **NFC**-normalise (not NFKC: the ligature `\ufb01` and full-width digits stay) as Unicode 14.0 does: a code point
   unassigned in 14.0 stays as it is, and nothing composes or reorders across it.
3. **Chunks**: split on white space (U+0009..U+000D, U+001C..U+0020, U+0085, U+00A0, U+1680, U+2000..U+200A,
   U+2028, U+2029, U+202F, U+205F, U+3000; Python's `str.split()`). A chunk that is exactly `<S>` or `</S>` is one
   word.
4. **Words**: inside a chunk, from its start, take the first of these that matches, as a word; where none matches,
   skip one character (this is where the controls U+0000..U+001F, U+007F..U+009F and U+200B separate words, and
   where a joiner or a combining mark with nothing before it in its word is dropped). Let *X* be the extenders (the
   marks `Mn`, `Mc`, `Me`; U+200C, U+200D; the skin tones U+1F3FB..U+1F3FF; the tags U+E0020..U+E007F), `\\w` a
   word character (a letter `L*`, a number `N*`, or `_`), `\\d` a decimal digit (`Nd`), *a letter* a `\\w` that
   is neither `\\d` nor `_` (numerals such as `\u00bd` and `\u216b` are letters), and *a boundary* a place after
   a `\\w` where no `\\w` follows: the chunk's end, or any other character (a mark, a control, U+200B). Only
   the clitics' letters match case-insensitively: `n`, `t`, `s`, `r`, `e`, `v`, `l`, `d`, `m` in either ASCII
   case, and U+017F (`\u017f`, the long s) as `s`; nothing else does (a Greek iota is a letter, never a mark).
   1. an abbreviation: two or more of (a letter *X*\\*, then `.`): `U.S.`, `e.g.`, `\u00bd.S.`;
   2. a number: (`\\d` *X*\\*)+, then any count of (one of `. , : /`, then (`\\d` *X*\\*)+): `3.14`,
      `1,000.50`, `10:30`;
   3. (`\\w` *X*\\*)+ followed by `n't` and a boundary: `do` of `don't`, not of `don'tx`; 4. `n't`, then a boundary;
   5. a clitic: `'s`, `'re`, `'ve`, `'ll`, `'d` or `'m`, then a boundary;
   6. a word: (`\\w` *X*\\*)+ with inner hyphens (`-` then more of it) and inner apostrophes (`'` not starting a
      clitic and a boundary, then more of it): `bio-identical`, `o'clock`, `n'tx`;
   7. `...` or `--`;
   8. two regional indicators (U+1F1E6..U+1F1FF): a flag;
   9. any other character that is not a control, U+200B, a joiner or a mark, with its *X*\\*; then, while the last
      character taken is U+200D, one more such character with its *X*\\* (an emoji sequence: a family; two joiners
      in a row join once: U+1F468 U+200D U+200D U+1F469 U+1F467 is two words, the last U+1F467).
5. A word's trailing U+200C and U+200D are removed (they join nothing; one before a mark is not trailing).

Rule 9 is why `(a)` is three words and a lone U+0301 or U+FE0F between spaces is none. Then each word gets its ids
by the character-id rule. `text_elmo_conformance.json`, beside `text_elmo.py`, holds a case (a raw line, its words
and their ids) for each rule and for each reading above that clients took two ways.
"""


def split_words(text: str) -> list[str]:
    """Split raw text into words, PTB-like (punctuation split off), never inside a character as the reader sees it.

    The text is first normalised to Unicode's NFC, so that a decomposed "e\\u0301cole" (as macOS file names and some
    web text hold it) is the same word, with the same character ids, as the precomposed "école". Whitespace
    separates words; inside a chunk, punctuation and symbols become words of their own, except inner hyphens and
    apostrophes ("bio-identical", "o'clock"), numbers ("3.14", "1,000"), abbreviations with inner periods ("U.S.")
    and the "..." and "--" marks. A grapheme cluster is never cut: combining marks stay with their letter, an emoji
    with its variation selector, skin tone or zero-width-joined sequence ("❤️", a family), a flag's two regional
    indicators together, England's flag (a tag sequence) whole. Clitics split as in the Penn Treebank: "don't" ->
    "do n't", "John's" -> "John 's". A literal "<S>"/"</S>" stays one word (the sentence marker's ids). The
    character classes are Unicode 14.0's on every Python.

    No word holds, or is, an invisible character: a control character (NUL, ESC, ...) or a zero-width space
    separates words ("wo\\x00rd" is "wo", "rd"), and every other format character (Unicode's Cf: the
    bidirectional marks and controls, the soft hyphen, the word joiner, a byte order mark) and a lone surrogate are
    dropped ("wo\\u200erd" is "word"), but for a zero-width joiner or non-joiner inside a word and a flag's tag
    characters. A combining mark with nothing before it in its word to combine with is dropped ("a \\u0301 b" is
    "a", "b").

    >>> split_words("Don't panic: it's 3.14, not U.S. law...")
    ['Do', "n't", 'panic', ':', 'it', "'s", '3.14', ',', 'not', 'U.S.', 'law', '...']
    """
    if not isinstance(text, str):
        raise TypeError(f"split_words takes one raw line, a str; got a {type(text).__name__}")
    pattern = _PLAIN_WORD_PATTERN
    if not text.isascii():  # (ASCII is NFC, without marks or format characters: the common case costs nothing)
        if not text.isprintable():  # (one pass in C: False wherever a control, format character or surrogate is)
            text = _INVISIBLE.sub(r"\1", text)  # before NFC composes: "e\u200e\u0301" is "é"
        text = _nfc(text)
        pattern = _CLUSTER_WORD_PATTERN if _CLUSTERED.search(text) else _PLAIN_WORD_PATTERN
    words = []
    for chunk in text.split():
        if chunk in (BOS_WORD, EOS_WORD):
            words.append(chunk)
        else:
            words.extend(pattern.findall(chunk))
    if pattern is _CLUSTER_WORD_PATTERN:  # a joiner that ends a word joins nothing (the pattern took it as a mark)
        words = [word.rstrip(_JOINERS) for word in words]
    return words


# ---------------------------------------------------------------------------------------------------------------
# The character-id rule
# ---------------------------------------------------------------------------------------------------------------

# A word is one row of `max_characters_per_token` character ids: `[bow, *body, eow, pad, ...]` (`framed_char_ids`).
# Its body is, for bilm-tf and AllenNLP, its UTF-8 bytes, each id the byte + 1 (0 means "no word here"), cut after
# `max_characters_per_token - 2` bytes (a multi-byte character may be cut); for ELMoForManyLangs, its first
# `max_characters_per_token - 2` code points, each looked up in a character vocabulary. The sentence-marker words
# `<S>` and `</S>` have one character of their own as their body instead.
#
# Each rule is written once, for one word (`word_to_char_ids`, `word_to_code_point_ids`); the batched forms
# (`words_to_char_ids`, `words_to_code_point_ids`) give the same rows for many words at once with numpy: the same
# encoding and lookup of a character, rows framed by `framed_char_ids`, the marker words' rows made by it too.
# tests/model/test_vocabulary.py holds each batched form equal to its rule on awkward words.


def framed_char_ids(
    body: Sequence[int], special_char_ids: Mapping[str, int], max_characters_per_token: int
) -> list[int]:
    """The `max_characters_per_token` character ids of one word: `[bow, *body, eow, pad, ...]` with the ids of
    `special_char_ids` (`bow`, `eow`, `pad`); `body` (at most `max_characters_per_token - 2` ids) is the word's
    characters, or the `bos`/`eos` character alone for a sentence marker."""
    ids = [special_char_ids["bow"], *body, special_char_ids["eow"]]
    return ids + [special_char_ids["pad"]] * (max_characters_per_token - len(ids))


def _marker_char_id(word: str, special_char_ids: Mapping[str, int]) -> int | None:
    """The character that stands for a sentence marker word (`<S>`, `</S>`) between its frame; None for other words."""
    if word in (BOS_WORD, EOS_WORD):
        return special_char_ids["bos" if word == BOS_WORD else "eos"]
    return None


# A word's bytes as bilm-tf reads them ("ignore": a lone surrogate has none); a byte's id is the byte + 1, so that 0
# is "no word here".
_ENCODING, _ERRORS = "utf-8", "ignore"
_BYTE_ID_SHIFT = 1


def word_to_char_ids(word: str, max_characters_per_token: int = 50) -> list[int]:
    """Character ids of one word, exactly as bilm-tf and AllenNLP compute them.

    UTF-8 bytes truncated to `max_characters_per_token - 2` (a multi-byte character may be cut), between
    begin- and end-of-word marks, padded, every id shifted by +1 so that 0 means "no word here".
    "<S>" and "</S>" are the sentence-marker words; "" is a valid word of no bytes.
    """
    marker = _marker_char_id(word, BILM_TF_CHAR_IDS)
    if marker is not None:
        body = [marker]
    else:
        body = [byte + _BYTE_ID_SHIFT for byte in word.encode(_ENCODING, _ERRORS)[: max_characters_per_token - 2]]
    return framed_char_ids(body, BILM_TF_CHAR_IDS, max_characters_per_token)


def word_to_code_point_ids(
    word: str, char_vocab: Mapping[str, int], special_char_ids: Mapping[str, int], max_characters_per_token: int
) -> list[int]:
    """Character ids of one word as ELMoForManyLangs computes them: its first `max_characters_per_token - 2` code
    points looked up in `char_vocab` (`special_char_ids["oov"]` for one it lacks), framed by `special_char_ids`."""
    marker = _marker_char_id(word, special_char_ids)
    if marker is not None:
        body = [marker]
    else:
        body = [char_vocab.get(char, special_char_ids["oov"]) for char in word[: max_characters_per_token - 2]]
    return framed_char_ids(body, special_char_ids, max_characters_per_token)


def words_to_char_ids(words: Sequence[str], max_characters_per_token: int = 50) -> np.ndarray:
    """`word_to_char_ids` of every word of `words`: (words, max_characters_per_token) int64, computed together."""
    width = max_characters_per_token - 2
    encoded = [word.encode(_ENCODING, _ERRORS) for word in words]
    sizes = np.fromiter(map(len, encoded), dtype=np.intp, count=len(encoded))
    data = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    body = _leading_units(data, sizes, width) + np.uint16(_BYTE_ID_SHIFT)  # small integers: less memory to write
    ids = _framed(body, np.minimum(sizes, width), BILM_TF_CHAR_IDS)
    return _with_markers(ids, words, BILM_TF_CHAR_IDS)


def words_to_code_point_ids(
    words: Sequence[str],
    char_vocab: Mapping[str, int],
    special_char_ids: Mapping[str, int],
    max_characters_per_token: int,
) -> np.ndarray:
    """`word_to_code_point_ids` of every word of `words`: (words, max_characters_per_token) int64, each distinct
    code point looked up once."""
    width = max_characters_per_token - 2
    sizes = np.fromiter(map(len, words), dtype=np.intp, count=len(words))
    # surrogatepass: a lone surrogate is a code point of its own, as when the str is indexed
    points = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype="<u4")
    code_points = _leading_units(points, sizes, width)
    distinct, positions = np.unique(code_points, return_inverse=True)
    oov = special_char_ids["oov"]
    ids = np.array([char_vocab.get(chr(point), oov) for point in distinct.tolist()], np.int64)
    body = ids[positions].reshape(code_points.shape)
    return _with_markers(_framed(body, np.minimum(sizes, width), special_char_ids), words, special_char_ids)


def _leading_units(units: np.ndarray, sizes: np.ndarray, width: int) -> np.ndarray:
    """The first `width` units (bytes or code points) of each word: (words, width).

    `units` holds the units of all the words end to end, `sizes` how many each word has (words,). Past a word's
    end a row holds what follows it (the next words, then zeros), for `_framed` to mask.
    """
    padded = np.concatenate((units, np.zeros(width, units.dtype)))
    # A read-only view of the window of `width` units at every position; indexing it copies one row per word.
    step = padded.strides[0]
    windows = np.lib.stride_tricks.as_strided(padded, (len(units) + 1, width), (step, step), writeable=False)
    return windows[np.cumsum(sizes) - sizes]


def _framed(body: np.ndarray, lengths: np.ndarray, special_char_ids: Mapping[str, int]) -> np.ndarray:
    """`framed_char_ids` of each row of `body` (words, width) cut to its `lengths` (words,): (words, width + 2)."""
    special = special_char_ids
    frames, slots = _frames(body.shape[1], special["bow"], special["eow"], special["pad"])
    ids = frames[lengths]  # one row gather per table instead of building each row
    np.copyto(ids[:, 1:-1], body, where=slots[lengths])
    return ids


@functools.lru_cache(maxsize=8)
def _frames(width: int, bow: int, eow: int, pad: int) -> tuple[np.ndarray, np.ndarray]:
    """For each word length 0..width: its row of `framed_char_ids` (width + 1, width + 2) int64, and where the
    word's ids go in it, (width + 1, width) bool (read-only: shared by every call)."""
    special = {"bow": bow, "eow": eow, "pad": pad}
    frames = np.array([framed_char_ids([pad] * length, special, width + 2) for length in range(width + 1)], np.int64)
    slots = np.arange(width) < np.arange(width + 1)[:, None]
    frames.flags.writeable = slots.flags.writeable = False
    return frames, slots


def _with_markers(ids: np.ndarray, words: Sequence[str], special_char_ids: Mapping[str, int]) -> np.ndarray:
    """`ids` (words, chars) with the rows of the sentence-marker words `<S>` and `</S>` made theirs."""
    for marker in (BOS_WORD, EOS_WORD):
        if marker in words:  # scans in C: a marker is rare, and looking at each word in Python is not
            row = framed_char_ids([_marker_char_id(marker, special_char_ids)], special_char_ids, ids.shape[1])
            index = words.index(marker)
            while True:
                ids[index] = row
                try:
                    index = words.index(marker, index + 1)
                except ValueError:
                    break
    return ids


# ---------------------------------------------------------------------------------------------------------------
# The word cache
# ---------------------------------------------------------------------------------------------------------------

# How many distinct words a tokenizer keeps the ids of (6.5 MB at 50 characters a word): real text repeats words.
DEFAULT_WORD_CACHE_SIZE = 16_384


class WordCache:
    """The ids of the words a tokenizer met last: one row of a table per word, row 0 for padding.

    Bounded: it holds at most `capacity` words between calls. When a call's new words would take it past that, it
    starts over with that call's words; one call with more distinct words than that has it to itself. A lock
    makes each look-up one step, so that threads sharing a tokenizer never read a row being rewritten. It pickles
    and copies as an empty cache: copies of a tokenizer, worker processes and `datasets` fingerprints do not
    carry, or depend on, the words it has seen.
    """

    def __init__(self, capacity: int, max_characters_per_token: int, with_word_ids: bool) -> None:
        if capacity < 1:
            raise ValueError(f"the word cache needs room for at least one word, got word_cache_size={capacity}")
        self.capacity = capacity
        self._arguments = (capacity, max_characters_per_token, with_word_ids)
        self._rows: dict[str, int] = {}
        self._char_ids = np.zeros((1, max_characters_per_token), dtype=np.int64)
        self._word_ids = np.zeros(1, dtype=np.int64) if with_word_ids else None
        self._lock = threading.Lock()

    def __reduce__(self) -> tuple[type, tuple[int, int, bool]]:
        return type(self), self._arguments

    def __len__(self) -> int:
        return len(self._rows)

    def gather(
        self,
        words: Sequence[str],
        layout: np.ndarray,
        encode: Callable[[list[str]], tuple[np.ndarray, np.ndarray | None]],
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """The ids of `words` laid out at the True cells of `layout` (row-major), zeros elsewhere.

        `encode(new_words)` gives the character ids (new words, chars) and word ids (new words,) or None of the
        words not in the cache. Returns character ids of shape (*layout.shape, chars) and word ids of
        `layout`'s shape (None without a word vocabulary).
        """
        with self._lock:
            index = np.zeros(layout.shape, dtype=np.intp)
            index[layout] = self._rows_of(words, encode)
            ids = self._char_ids[index], None if self._word_ids is None else self._word_ids[index]
            if len(self._rows) > self.capacity:  # this call's words alone were more than the cache keeps
                self._forget_words()
            return ids

    def _rows_of(self, words: Sequence[str], encode: Callable) -> np.ndarray:
        rows = self._rows
        try:
            return np.fromiter(map(rows.__getitem__, words), dtype=np.intp, count=len(words))  # all cached
        except KeyError:
            pass
        new_words = list(set(words).difference(rows))  # C-level passes over the call's words, whatever the order
        if len(rows) + len(new_words) > self.capacity:  # full: start over with this call's words
            self._forget_words()
            new_words = list(set(words))
        first = len(rows) + 1
        self._store(first, *encode(new_words))
        # Registered only once their ids are stored: an interruption (Ctrl-C) leaves no word without its ids.
        rows.update(zip(new_words, range(first, first + len(new_words)), strict=True))
        return np.fromiter(map(rows.__getitem__, words), dtype=np.intp, count=len(words))

    def _forget_words(self) -> None:
        self._rows.clear()
        if len(self._char_ids) > self.capacity + 1:  # grown for one call beyond the bound: give the memory back
            self._char_ids = self._char_ids[: self.capacity + 1].copy()
            self._word_ids = None if self._word_ids is None else self._word_ids[: self.capacity + 1].copy()

    def _store(self, first: int, char_ids: np.ndarray, word_ids: np.ndarray | None) -> None:
        end = first + len(char_ids)
        if end > len(self._char_ids):  # grow by doubling, up to the capacity unless one call needs more
            size = max(end, min(2 * len(self._char_ids), self.capacity + 1))
            self._char_ids = _resized(self._char_ids, size)
            self._word_ids = None if self._word_ids is None else _resized(self._word_ids, size)
        self._char_ids[first:end] = char_ids
        if self._word_ids is not None:
            self._word_ids[first:end] = word_ids


def _resized(table: np.ndarray, rows: int) -> np.ndarray:
    grown = np.empty((rows, *table.shape[1:]), dtype=table.dtype)  # rows past the old ones: written before read
    grown[: len(table)] = table
    return grown


# ---------------------------------------------------------------------------------------------------------------
# The encoder: raw text, or words, to the model's inputs
# ---------------------------------------------------------------------------------------------------------------

_TOKENIZER_CONFIG, _MODEL_CONFIG, _CHAR_VOCAB = "tokenizer_config.json", "config.json", "char_vocab.json"
# The framing characters a character vocabulary (ELMoForManyLangs) gives the ids of, and a word vocabulary's words.
CODE_POINT_SPECIAL_CHARS = ("bos", "eos", "bow", "eow", "pad", "oov")
WORD_VOCAB_SPECIAL_WORDS = ("bos", "eos", "oov")
_STR_TYPE = frozenset((str,))


def all_str(values: Sequence[object]) -> bool:
    """Whether every one of `values` is a str (a subclass of str too): the one test of "words" and "lines"."""
    # The set of the values' types is built in C: a per-word isinstance took a third of a cached batch's time.
    return _STR_TYPE.issuperset(map(type, values)) or all(isinstance(value, str) for value in values)


def _first_non_str(values: Sequence[object]) -> str:
    return next(type(value).__name__ for value in values if not isinstance(value, str))


class ElmoTextEncoder:
    """Raw lines, or sentences of words, to ELMo's inputs with numpy alone: `input_ids` (batch, words,
    max_characters_per_token) int64, `attention_mask` (batch, words) int64. Sentences are padded on the right to
    the longest with rows of 0 ("no word") and mask 0; no `<S>`/`</S>` is added (the model adds them). The ids of
    the last `word_cache_size` distinct words met are kept (`WordCache`): a batch costs about one dictionary
    look-up per word. Threads may share one encoder.

    By default a word is its UTF-8 bytes (bilm-tf, AllenNLP). With `char_vocab` (character -> id) a word is its
    code points (ELMoForManyLangs), framed by `special_char_ids` (each of `CODE_POINT_SPECIAL_CHARS`); with
    `word_vocab` (word -> id, and `special_word_ids` for each of `WORD_VOCAB_SPECIAL_WORDS`) it also gives
    `input_word_ids` (batch, words). `ElmoTokenizer` (tokenization_elmo.py) is this encoder behind transformers'
    interface: `padded_ids` is the one path from words to padded ids of both.

    >>> encoder = ElmoTextEncoder()
    >>> encoder.split("It's 3.14.")
    ['It', "'s", '3.14', '.']
    >>> inputs = encoder.encode_text(["It's 3.14.", ""])
    >>> inputs["input_ids"].shape, inputs["attention_mask"].tolist()
    ((2, 4, 50), [[1, 1, 1, 1], [0, 0, 0, 0]])
    """

    def __init__(
        self,
        max_characters_per_token: int = 50,
        word_cache_size: int = DEFAULT_WORD_CACHE_SIZE,
        *,
        char_vocab: Mapping[str, int] | None = None,
        special_char_ids: Mapping[str, int] | None = None,
        word_vocab: Mapping[str, int] | None = None,
        special_word_ids: Mapping[str, int] | None = None,
    ) -> None:
        self.max_characters_per_token = checked_max_characters_per_token(max_characters_per_token, "ElmoTextEncoder: ")
        self.char_vocab, self.word_vocab = char_vocab, word_vocab
        self.special_char_ids = dict(special_char_ids or BILM_TF_CHAR_IDS)
        self.special_word_ids = dict(special_word_ids or {})
        if char_vocab is not None and set(self.special_char_ids) != set(CODE_POINT_SPECIAL_CHARS):
            raise ValueError(f"a character vocabulary needs special_char_ids for {sorted(CODE_POINT_SPECIAL_CHARS)}")
        if word_vocab is not None and set(self.special_word_ids) != set(WORD_VOCAB_SPECIAL_WORDS):
            raise ValueError(f"a word vocabulary needs special_word_ids for {sorted(WORD_VOCAB_SPECIAL_WORDS)}")
        self._word_cache = WordCache(word_cache_size, max_characters_per_token, word_vocab is not None)

    @classmethod
    def from_folder(cls, folder: str | Path, word_cache_size: int = DEFAULT_WORD_CACHE_SIZE) -> ElmoTextEncoder:
        """The encoder of a saved model folder (or an exported one): its `max_characters_per_token`, from its
        tokenizer_config.json (config.json where it has none). A folder whose tokenizer reads code points through
        a char_vocab.json (ELMoForManyLangs) is refused: this reads bilm-tf's UTF-8 byte ids' settings only."""
        folder = Path(folder)
        if (folder / _CHAR_VOCAB).exists():
            raise ValueError(
                f"{folder / _CHAR_VOCAB}: this folder's tokenizer reads code points through a character vocabulary "
                "(ELMoForManyLangs); ElmoTextEncoder.from_folder makes encoders of bilm-tf's UTF-8 byte ids only: "
                "use its ElmoTokenizer"
            )
        for name in (_TOKENIZER_CONFIG, _MODEL_CONFIG):
            if (folder / name).is_file():
                settings = _read_json_object(folder / name)
                _check_padding_token(folder / name, settings)
                width = checked_max_characters_per_token(
                    settings.get("max_characters_per_token", 50), f"{folder / name}: "
                )
                return cls(width, word_cache_size)
        raise ValueError(f"{folder}: neither {_TOKENIZER_CONFIG} nor {_MODEL_CONFIG} is there (not a model folder)")

    def split(self, text: str) -> list[str]:
        """The words of one raw line (`split_words`; a TypeError for anything but a str)."""
        return split_words(text)

    def word_char_ids(self, word: str) -> list[int]:
        """The `max_characters_per_token` character ids of one word."""
        if self.char_vocab is None:
            return word_to_char_ids(word, self.max_characters_per_token)
        return word_to_code_point_ids(word, self.char_vocab, self.special_char_ids, self.max_characters_per_token)

    def word_id(self, word: str) -> int:
        """The word-embedding id of one word (looked up as cut to the characters the model sees)."""
        special = self.special_word_ids
        if word in (BOS_WORD, EOS_WORD):
            return special["bos"] if word == BOS_WORD else special["eos"]
        return self.word_vocab.get(word[: self.max_characters_per_token - 2], special["oov"])

    def encode_words(self, sentences: Iterable[Sequence[str]]) -> dict[str, np.ndarray]:
        """`input_ids` and `attention_mask` (and `input_word_ids` with a word vocabulary) of sentences given as
        their words (a list, or any iterable, of lists of words), each word kept exactly (an empty string or a word
        with spaces included), one position per word."""
        if isinstance(sentences, str):
            raise TypeError("encode_words takes sentences as lists of words; for raw lines use encode_text")
        sentences = list(sentences)  # (an iterator is read once, here)
        if any(isinstance(sentence, str) for sentence in sentences):
            raise TypeError("encode_words takes sentences as lists of words; for raw lines use encode_text")
        words = list(itertools.chain.from_iterable(sentences))
        if not all_str(words):
            raise TypeError(f"every word must be a str, got a {_first_non_str(words)}")
        char_ids, word_ids, mask = self.padded_ids(sentences)
        inputs = {"input_ids": char_ids, "attention_mask": mask.astype(np.int64)}
        return inputs if word_ids is None else {**inputs, "input_word_ids": word_ids}

    def encode_text(self, lines: Iterable[str]) -> dict[str, np.ndarray]:
        """`input_ids` and `attention_mask` of raw lines (a list, or any iterable, of str), one sentence each:
        `split`, then `encode_words`."""
        if isinstance(lines, str | bytes):
            raise TypeError("encode_text takes a list of raw lines (str), one sentence each, not one line")
        lines = list(lines)  # (an iterator is read once, here: the check below would leave nothing to encode)
        if not all_str(lines):
            raise TypeError(
                f"encode_text takes a list of raw lines (str), one sentence each; got a {_first_non_str(lines)} "
                "among them"
            )
        return self.encode_words([split_words(line) for line in lines])

    def padded_ids(
        self, sentences: Sequence[Sequence[str]], words: int = 0
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
        """The one path from words to ids: sentences of words (str, unchecked) padded on the right to the longest
        or to `words` words, whichever is more. Returns the character ids (batch, words, chars) int64, rows of 0
        where no word is; the word ids (batch, words) int64, 0 where no word is (None without a word vocabulary);
        and the mask (batch, words) bool, True where a word is."""
        lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
        mask = np.arange(max(lengths.max(initial=0), words)) < lengths[:, None]
        char_ids, word_ids = self._word_cache.gather(
            list(itertools.chain.from_iterable(sentences)), mask, self._new_word_ids
        )
        return char_ids, word_ids, mask

    def _new_word_ids(self, words: list[str]) -> tuple[np.ndarray, np.ndarray | None]:
        """`word_char_ids` (words, chars) and `word_id` (words,) of many distinct words at once, for the cache."""
        if self.char_vocab is None:
            char_ids = words_to_char_ids(words, self.max_characters_per_token)
        else:
            char_ids = words_to_code_point_ids(
                words, self.char_vocab, self.special_char_ids, self.max_characters_per_token
            )
        word_ids = None if self.word_vocab is None else np.array([self.word_id(word) for word in words], np.int64)
        return char_ids, word_ids


def _read_json_object(path: Path) -> dict:
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path}: cannot be read as JSON ({error})") from None
    if not isinstance(settings, dict):
        raise ValueError(f"{path}: expected a JSON object, got a {type(settings).__name__}")
    return settings


def _check_padding_token(path: Path, settings: Mapping) -> None:
    """A padded position is a row of 0 ("no word"), as the tokenizer writes it with its own `<pad>` (id 0)."""
    token = settings.get("pad_token", "<pad>")
    content = token.get("content") if isinstance(token, dict) else token
    if content not in ("<pad>", None):
        raise ValueError(f"{path}: pad_token must be '<pad>' (id 0, a row of no word), got {content!r}")
