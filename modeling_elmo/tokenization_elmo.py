"""ELMo's tokenizer for transformers: text -> words -> one row of 50 character ids per word.

ELMo has no word vocabulary: each word is its UTF-8 bytes between begin-of-word and end-of-word marks,
as the original bilm-tf/AllenNLP character mapping defines it. The "vocabulary" of this tokenizer is
therefore the 262 character symbols, so `pad_token_id` is 0, the id of "no character / no word".
ELMoForManyLangs models instead read code points through a character vocabulary, plus word ids for their
word embedding: the same tokenizer with `char_vocab.json` (and `word_vocab.json`) does that.

This module adapts them to transformers' `PreTrainedTokenizer` (its ids are 2-D per sentence: `_encode_plus`,
`pad` and `decode` are its own). The split, the ids of words, their padding and the cache of the words met again are
the text front end's: each tokenizer holds a `text_elmo.ElmoTextEncoder` (numpy alone, the one home of these rules,
also used without this class) and hands it the words; what is left here is transformers' side of the call
(truncation, padding strategies, tensors, `pad`, `decode`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import torch
from transformers import BatchEncoding, PreTrainedTokenizer
from transformers.tokenization_utils_base import PaddingStrategy, TruncationStrategy

from .text_elmo import (
    BOS_WORD,
    CODE_POINT_SPECIAL_CHARS,
    DEFAULT_WORD_CACHE_SIZE,
    EOS_WORD,
    ElmoTextEncoder,
    all_str,
    checked_max_characters_per_token,
)

__all__ = ["ElmoTokenizer", "pad_sentences"]

# The symbol of each framing character (`text_elmo.CODE_POINT_SPECIAL_CHARS`) in the tokenizer's vocabulary.
_SPECIAL_SYMBOLS = dict(
    zip(CODE_POINT_SPECIAL_CHARS, (BOS_WORD, EOS_WORD, "<bow>", "<eow>", "<char_pad>", "<oov>"), strict=True)
)


def _read_json_vocabulary(path: str | None) -> dict[str, int] | None:
    if path is None:
        return None
    with open(path, encoding="utf-8") as file:
        return json.load(file)


class ElmoTokenizer(PreTrainedTokenizer):
    r"""Turns text into ELMo character ids: `input_ids` of shape (batch, words, max_characters_per_token).

    - Raw text is split into words by [`split_words`] (PTB-like). With `is_split_into_words=True` every given
      word is kept exactly, one output position per word (empty strings and words with spaces included).
    - `attention_mask` has shape (batch, words). Padding is on the right: whole rows of id 0.
    - `max_length`, `truncation` and `padding` count words. The `<S>`/`</S>` sentence markers are not
      added here: [`ElmoModel`] adds and removes them, so outputs align 1:1 with the input words.

    By default a word is its UTF-8 bytes (bilm-tf/AllenNLP). With `char_vocab_file` (a JSON object from
    character to model id) a word is its first `max_characters_per_token - 2` code points, unknown ones
    mapped to `special_char_ids["oov"]` (ELMoForManyLangs); `special_char_ids` gives the ids of the framing
    characters (`bow`, `eow`, `bos`, `eos`, `pad`, `oov`). With `word_vocab_file` the tokenizer also returns
    `input_word_ids` (batch, words), unknown words mapped to `special_word_ids["oov"]`.

    The split, the ids and the padding are its `ElmoTextEncoder`'s (text_elmo.py), which keeps the ids of the last
    `word_cache_size` distinct words met (a cache of each instance, never saved or copied) and converts new words
    together with numpy: a batch costs about one dictionary look-up per word.
    """

    vocab_files_names = {"char_vocab_file": "char_vocab.json", "word_vocab_file": "word_vocab.json"}
    model_input_names = ["input_ids", "attention_mask"]
    padding_side = "right"
    truncation_side = "right"

    def __init__(
        self,
        char_vocab_file: str | None = None,
        word_vocab_file: str | None = None,
        *,
        max_characters_per_token: int = 50,
        special_char_ids: dict[str, int] | None = None,
        special_word_ids: dict[str, int] | None = None,
        pad_token: str = "<pad>",
        bos_token: str = BOS_WORD,
        eos_token: str = EOS_WORD,
        word_cache_size: int = DEFAULT_WORD_CACHE_SIZE,
        **kwargs,
    ) -> None:
        self.max_characters_per_token = checked_max_characters_per_token(max_characters_per_token, "ElmoTokenizer: ")
        self._text_encoder = ElmoTextEncoder(
            max_characters_per_token,
            word_cache_size,
            char_vocab=_read_json_vocabulary(char_vocab_file),
            special_char_ids=special_char_ids,
            word_vocab=_read_json_vocabulary(word_vocab_file),
            special_word_ids=special_word_ids,
        )
        # The encoder's settings, read by `decode` and `save_vocabulary` (and by callers, as before the encoder).
        encoder = self._text_encoder
        self.char_vocab, self.word_vocab = encoder.char_vocab, encoder.word_vocab
        self.special_char_ids, self.special_word_ids = encoder.special_char_ids, encoder.special_word_ids
        if self.word_vocab is not None:
            self.model_input_names = [*self.model_input_names, "input_word_ids"]
        symbols = {f"<0x{byte:02X}>": byte + 1 for byte in range(256)} if self.char_vocab is None else self.char_vocab
        specials = {_SPECIAL_SYMBOLS[name]: char_id for name, char_id in self.special_char_ids.items()}
        self._vocab = {"<pad>": 0, **symbols, **specials}
        self._ids_to_symbols = {index: symbol for symbol, index in self._vocab.items()}
        kwargs.setdefault("model_max_length", 1_000_000)
        super().__init__(
            max_characters_per_token=max_characters_per_token,
            special_char_ids=special_char_ids,
            special_word_ids=special_word_ids,
            pad_token=pad_token,
            bos_token=bos_token,
            eos_token=eos_token,
            **kwargs,
        )

    # The character vocabulary, for pad_token_id and friends.
    @property
    def vocab_size(self) -> int:
        return len(self._vocab)

    def get_vocab(self) -> dict[str, int]:
        return dict(self._vocab)

    def _convert_token_to_id(self, token: str) -> int:
        return self._vocab[token]

    def _convert_id_to_token(self, index: int) -> str:
        return self._ids_to_symbols[index]

    def save_vocabulary(self, save_directory: str, filename_prefix: str | None = None) -> tuple[str, ...]:
        """Write the character and word vocabularies, where there are any (the UTF-8 mapping is fixed)."""
        written = []
        for vocabulary, name in ((self.char_vocab, "char_vocab_file"), (self.word_vocab, "word_vocab_file")):
            if vocabulary is not None:
                path = os.path.join(save_directory, (filename_prefix or "") + self.vocab_files_names[name])
                with open(path, "w", encoding="utf-8") as file:
                    json.dump(vocabulary, file, ensure_ascii=False, indent=0)
                written.append(path)
        return tuple(written)

    def word_char_ids(self, word: str) -> list[int]:
        """The `max_characters_per_token` character ids of one word (`ElmoTextEncoder.word_char_ids`)."""
        return self._text_encoder.word_char_ids(word)

    def word_id(self, word: str) -> int:
        """The word-embedding id of one word, as cut to the characters the model sees (`ElmoTextEncoder.word_id`)."""
        return self._text_encoder.word_id(word)

    def _ids_to_word(self, char_ids: Sequence[int]) -> str | None:
        """Inverse of `word_char_ids` (bytes a truncation cut show as U+FFFD); None for a padding row."""
        ids = [char for char in char_ids if char > 0]
        if not ids:
            return None
        special = self.special_char_ids
        inner = ids[1 : ids.index(special["eow"])] if special["eow"] in ids[1:] else ids[1:]
        if inner == [special["bos"]]:
            return BOS_WORD
        if inner == [special["eos"]]:
            return EOS_WORD
        if self.char_vocab is None:
            return bytes(char - 1 for char in inner if char <= 256).decode("utf-8", "replace")
        return "".join(self._ids_to_symbols.get(char, "\ufffd") for char in inner)

    def tokenize(self, text: str, **kwargs) -> list[str]:
        """Split raw text into words (see [`split_words`])."""
        return self._text_encoder.split(text)

    def _encode_plus(
        self,
        text: str | Sequence[str] | Sequence[Sequence[str]],
        text_pair: Any = None,
        padding_strategy: PaddingStrategy = PaddingStrategy.DO_NOT_PAD,
        truncation_strategy: TruncationStrategy = TruncationStrategy.DO_NOT_TRUNCATE,
        max_length: int | None = None,
        is_split_into_words: bool = False,
        pad_to_multiple_of: int | None = None,
        padding_side: str | None = None,
        return_tensors: str | None = None,
        return_attention_mask: bool | None = None,
        return_length: bool = False,
        return_special_tokens_mask: bool = False,
        **kwargs,
    ) -> BatchEncoding:
        """The whole batch as arrays, from `ElmoTextEncoder.padded_ids` (each distinct word's ids from the word
        cache, placed with one look-up), padded as transformers' arguments ask.

        An empty batch gives empty arrays: `input_ids` (0, 0, chars) and `attention_mask` (0, 0) as tensors,
        empty lists without `return_tensors`.
        """
        if text_pair is not None:
            raise ValueError("ElmoTokenizer encodes single sentences; sentence pairs (text_pair) are not supported")
        if return_special_tokens_mask:
            # transformers' token-classification pipeline asks for it, then reads each position as one token id.
            raise ValueError(
                "ElmoTokenizer adds no special tokens (every position is a word of 50 character ids; the model adds "
                "<S> and </S> itself), so it has no special_tokens_mask, and transformers' token-classification "
                'pipeline cannot read its positions: use pipeline("elmo-token-classification", model=...) (import '
                "modeling_elmo first), which gives the same output per word"
            )
        is_batched = isinstance(text, (list, tuple)) and (
            not is_split_into_words or (len(text) > 0 and not isinstance(text[0], str))
        )
        sentences = [self._words_of(sentence, is_split_into_words) for sentence in (text if is_batched else [text])]
        self._check_padding_side(padding_side)
        _check_max_length(max_length)
        if truncation_strategy != TruncationStrategy.DO_NOT_TRUNCATE and max_length is not None:
            sentences = [self._truncated(words, max_length) for words in sentences]
        lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
        padded = np.maximum(lengths, _padded_length(padding_strategy, lengths.tolist(), max_length, pad_to_multiple_of))
        if return_tensors is not None and len(set(padded.tolist())) > 1:
            raise ValueError(
                f"Sentences of different lengths {sorted(set(lengths.tolist()))} cannot form one tensor: "
                "pass padding=True"
            )
        char_ids, word_ids, mask = self._text_encoder.padded_ids(sentences, int(padded.max(initial=0)))
        if self.pad_token_id:  # the encoder pads with zeros, the id of "<pad>"
            char_ids[~mask] = self.pad_token_id
        columns = {"input_ids": char_ids}
        if word_ids is not None:
            columns["input_word_ids"] = word_ids
        if return_length:
            columns["length"] = lengths
        if return_attention_mask or (return_attention_mask is None and "attention_mask" in self.model_input_names):
            columns["attention_mask"] = mask.astype(np.int64)
        return _batch_encoding(columns, padded, is_batched, return_tensors)

    def _truncated(self, words: list[str], max_length: int) -> list[str]:
        return words[:max_length] if self.truncation_side == "right" else words[max(len(words) - max_length, 0) :]

    def _check_padding_side(self, padding_side: str | None) -> None:
        if (padding_side or self.padding_side) != "right":
            raise ValueError("ELMo inputs must be padded on the right (the model adds </S> after the last word)")

    def _words_of(self, sentence: Any, is_split_into_words: bool) -> list[str]:
        if is_split_into_words:
            if isinstance(sentence, str) or not all_str(sentence):
                raise ValueError(
                    f"With is_split_into_words=True each sentence must be a list of strings, got {sentence!r:.80}"
                )
            return list(sentence)
        if not isinstance(sentence, str):
            raise ValueError(
                f"Expected a string (or lists of words with is_split_into_words=True), got {type(sentence).__name__}"
            )
        return self._text_encoder.split(sentence)

    def pad(
        self,
        encoded_inputs: Mapping[str, Any] | Sequence[Mapping[str, Any]],
        padding: bool | str | PaddingStrategy = True,
        max_length: int | None = None,
        pad_to_multiple_of: int | None = None,
        padding_side: str | None = None,
        return_attention_mask: bool | None = None,
        return_tensors: str | None = None,
        verbose: bool = True,
    ) -> BatchEncoding:
        """Pad a batch of encoded sentences (a list of dicts, or a dict of lists) to a common number of words.

        `input_ids` gain rows of zeros and `attention_mask` zeros, on the right. Other per-example entries
        (labels of sequence classification, lengths) pass through untouched; `return_tensors="pt"` or `"np"`
        converts everything.
        """
        if isinstance(encoded_inputs, Mapping):
            keys = list(encoded_inputs)
            if _is_one_sentence(encoded_inputs["input_ids"]):
                encoded_inputs = [encoded_inputs]
            else:
                encoded_inputs = [
                    dict(zip(keys, values, strict=True)) for values in zip(*encoded_inputs.values(), strict=True)
                ]
        examples = [dict(example) for example in encoded_inputs]
        if not examples:
            raise ValueError("pad() got an empty batch")
        if "input_ids" not in examples[0]:
            raise ValueError(f"pad() needs 'input_ids' in every example, got keys {sorted(examples[0])}")
        self._check_padding_side(padding_side)
        _check_max_length(max_length)
        ids = [_as_word_rows(example["input_ids"]) for example in examples]
        lengths = [len(rows) for rows in ids]
        target = _padded_length(padding, lengths, max_length, pad_to_multiple_of)
        if return_attention_mask is None:
            return_attention_mask = "attention_mask" in self.model_input_names
        for example, rows in zip(examples, ids, strict=True):
            example["input_ids"] = rows
        pad_row = [self.pad_token_id] * self.max_characters_per_token
        batch = pad_sentences(examples, target, pad_row, attention_mask=return_attention_mask)
        if return_tensors is not None and len(set(len(rows) for rows in batch["input_ids"])) > 1:
            raise ValueError(
                f"Sentences of different lengths {sorted(set(lengths))} cannot form one tensor: pass padding=True"
            )
        if return_tensors is not None and not batch["input_ids"][0]:
            # torch cannot infer the (words, chars) shape of a batch of empty sentences from nested lists.
            batch["input_ids"] = np.zeros((len(examples), 0, self.max_characters_per_token), dtype=np.int64)
        return BatchEncoding(batch, tensor_type=return_tensors)

    def decode(self, token_ids: Any, skip_special_tokens: bool = False, **kwargs) -> str | list[str]:
        """Words back from character ids: (words, chars) gives one string, (batch, words, chars) a list.

        Padding rows are dropped; `skip_special_tokens` also drops `<S>`/`</S>` words.
        """
        ids = np.asarray(token_ids.tolist() if isinstance(token_ids, torch.Tensor) else token_ids, dtype=np.int64)
        if ids.ndim == 3:
            return [self.decode(sentence, skip_special_tokens=skip_special_tokens) for sentence in ids]
        if ids.ndim != 2:
            raise ValueError(f"decode expects ids of shape (words, chars) or (batch, words, chars), got {ids.shape}")
        words = (self._ids_to_word(row) for row in ids.tolist())
        special = (BOS_WORD, EOS_WORD) if skip_special_tokens else ()
        return " ".join(word for word in words if word is not None and word not in special)

    def batch_decode(self, sequences: Any, skip_special_tokens: bool = False, **kwargs) -> list[str]:
        return [self.decode(sentence, skip_special_tokens=skip_special_tokens) for sentence in sequences]


def pad_sentences(
    examples: Sequence[Mapping[str, Any]], words: int, pad_row: list[int], *, attention_mask: bool = True
) -> dict[str, list]:
    """The columns of encoded sentences padded on the right to at least `words` words: `input_ids`
    (words, chars) rows gain `pad_row`s (the "no word" row, all 0 but for a tokenizer with its own `<pad>`),
    `attention_mask` (ones where absent; left out unless `attention_mask`) and `input_word_ids` zeros; any other
    column passes through. The one place a sentence's inputs to the model are padded (`ElmoTokenizer.pad`, and
    callers that pad stored encodings without a tokenizer)."""
    padded = []
    for example in examples:
        example = dict(example)
        rows = list(example["input_ids"])
        missing = max(words - len(rows), 0)
        if attention_mask:
            example["attention_mask"] = list(example.get("attention_mask", [1] * len(rows))) + [0] * missing
        if "input_word_ids" in example:
            example["input_word_ids"] = list(example["input_word_ids"]) + [0] * missing
        example["input_ids"] = rows + [pad_row] * missing
        padded.append(example)
    return {key: [example[key] for example in padded] for key in padded[0]} if padded else {}


def _batch_encoding(
    columns: dict[str, np.ndarray], lengths: np.ndarray, is_batched: bool, return_tensors: str | None
) -> BatchEncoding:
    """`columns` ((batch, words, ...) arrays, "length" (batch,)) as tensors of `return_tensors`, or as lists of
    each sentence's `lengths` words (without the batch axis for one sentence)."""
    if return_tensors is None:
        counts = lengths.tolist()
        lists = {
            key: value.tolist() if key == "length" else [row[:n] for row, n in zip(value.tolist(), counts, strict=True)]
            for key, value in columns.items()
        }
        return BatchEncoding(lists if is_batched else {key: value[0] for key, value in lists.items()})
    if return_tensors == "pt":  # the arrays are fresh: torch shares them instead of copying
        return BatchEncoding({key: torch.from_numpy(value) for key, value in columns.items()})
    return BatchEncoding(columns, tensor_type=return_tensors)


def _is_one_sentence(input_ids: Any) -> bool:
    """True for the ids of one sentence, (words, chars); False for a batch, (batch, words, chars)."""
    if isinstance(input_ids, torch.Tensor | np.ndarray):
        return input_ids.ndim == 2
    return len(input_ids) > 0 and len(input_ids[0]) > 0 and isinstance(input_ids[0][0], int)


def _as_word_rows(input_ids: Any) -> list[list[int]]:
    if isinstance(input_ids, torch.Tensor | np.ndarray):
        return input_ids.tolist()
    return [list(row) for row in input_ids]


def _check_max_length(max_length: int | None) -> None:
    # A negative count would slice words off the end (words[:-1]) instead of keeping that many.
    if max_length is not None and (not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 0):
        raise ValueError(f"max_length must be a number of words (an int >= 0) or None, got {max_length!r}")


def _padded_length(
    padding: bool | str | PaddingStrategy, lengths: Iterable[int], max_length: int | None, multiple: int | None
) -> int:
    lengths = list(lengths)
    strategy = PaddingStrategy(padding) if isinstance(padding, str) else padding
    if strategy is True:
        strategy = PaddingStrategy.LONGEST
    elif strategy is False:
        strategy = PaddingStrategy.DO_NOT_PAD
    if strategy == PaddingStrategy.DO_NOT_PAD:
        return 0
    if strategy == PaddingStrategy.MAX_LENGTH:
        if max_length is None:
            raise ValueError("padding='max_length' needs max_length (a number of words)")
        target = max_length
    else:
        target = max(lengths, default=0)
    if multiple:
        target = -(-target // multiple) * multiple
    return target
