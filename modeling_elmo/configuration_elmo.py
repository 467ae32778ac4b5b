"""Configuration of an ELMo bidirectional language model (Peters et al., 2018)."""

import json
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import fields
from functools import wraps
from typing import Any

from huggingface_hub.dataclasses import strict, validated_field
from huggingface_hub.errors import StrictDataclassClassValidationError, StrictDataclassFieldValidationError
from transformers import PreTrainedConfig

from .kernels_elmo import LSTM_IMPLEMENTATIONS
from .text_elmo import BILM_TF_CHAR_IDS, MAX_CHARACTERS_PER_TOKEN

__all__ = [
    "BILM_TF_CHAR_VOCAB_SIZE",
    "ELMO_AUTO_MAP",
    "ELMO_CONFIG_FIELDS",
    "ORIGINAL_CHAR_CNN_FILTERS",
    "TASK_HEAD_FIELDS",
    "ElmoConfig",
    "check_field",
    "shown_as_json",
]

# Where each class lives when a saved folder is loaded as Hub remote code (trust_remote_code=True).
# transformers only records the classes that were saved; listing them all lets any Auto class find its own.
ELMO_AUTO_MAP = {
    "AutoConfig": "configuration_elmo.ElmoConfig",
    "AutoModel": "modeling_elmo.ElmoModel",
    "AutoModelForPreTraining": "modeling_elmo.ElmoForBidirectionalLM",
    "AutoModelForTokenClassification": "modeling_elmo.ElmoForTokenClassification",
    "AutoModelForSequenceClassification": "modeling_elmo.ElmoForSequenceClassification",
    "AutoTokenizer": ["tokenization_elmo.ElmoTokenizer", None],
}

# The released "original" model's character CNN, 2x4096_512_2048cnn_2xhighway (93.6M parameters): [width, count]
# per filter. The other released models and ELMoForManyLangs' use it too.
ORIGINAL_CHAR_CNN_FILTERS = ((1, 32), (2, 32), (3, 64), (4, 128), (5, 256), (6, 512), (7, 1024))

# bilm-tf's character map. A word is its UTF-8 bytes (ids 1..256: byte + 1) between a begin-of-word and an
# end-of-word character, then padding characters; the sentence markers <S> and </S> are one character each between
# the same two. Ids are bilm-tf's plus one, which frees id 0 for "no character" (262 ids for its 261 characters).
BILM_TF_CHAR_VOCAB_SIZE = max(BILM_TF_CHAR_IDS.values()) + 1


CHAR_CNN_ACTIVATIONS = ("relu", "tanh")
MIX_MODES = ("scalar_mix", "average", "layer", "concat", "per_token")
TASK_ENCODERS = ("bilstm", "none")


# Field checks: each takes one field's value and raises ValueError("must be EXPECTED, got VALUE") when it does not
# fit. Each field of ElmoConfig is declared with its check (`validated_field`), which `@strict` runs whenever the
# field is set; `check_field` runs it on a value alone (`common/options_json.py`: an options.json entry). Values are
# shown as JSON, the form config.json and options.json give them in. (transformers declares its configs as strict
# dataclasses from 5.4 on: `pyproject.toml`'s lower bound.)
def _value_check(expected: str, fits: Callable[[Any], bool], *, optional: bool = False) -> Callable[[Any], None]:
    expected += " or null" if optional else ""

    def check(value: Any) -> None:
        if not ((optional and value is None) or fits(value)):
            raise ValueError(f"must be {expected}, got {shown_as_json(value)}")

    return check


def shown_as_json(value: Any) -> str:
    """`value` as JSON writes it (true, null, "text"), cut to 80 characters; its repr where JSON has no form."""
    try:
        shown = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        shown = repr(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # JSON true is no count


def _is_number(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


def _int_check(minimum: int, *, optional: bool = False) -> Callable[[Any], None]:
    expected = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
    return _value_check(expected, lambda value: _is_int(value) and value >= minimum, optional=optional)


def _choice_check(choices: Collection[str]) -> Callable[[Any], None]:
    """`choices` are read at each check, so that names registered later count (`kernels_elmo.LSTM_IMPLEMENTATIONS`);
    a value that is no string is none of them (and is not looked up among a dict's keys, which must be hashable)."""

    def check(value: Any) -> None:
        expected = "one of " + ", ".join(map(json.dumps, choices))
        _value_check(expected, lambda value: isinstance(value, str) and value in choices)(value)

    return check


def _list_check(expected: str, fits_item: Callable[[Any], bool]) -> Callable[[Any], None]:
    return _value_check(
        expected, lambda value: isinstance(value, list | tuple) and all(map(fits_item, value)), optional=True
    )


def _is_filter_list(value: Any) -> bool:
    pairs = isinstance(value, list | tuple) and all(isinstance(pair, list | tuple) and len(pair) == 2 for pair in value)
    return pairs and len(value) > 0 and all(_is_int(n) and n > 0 for pair in value for n in pair)


_POSITIVE_INT = _int_check(1)
_COUNT = _int_check(0)
_OPTIONAL_ID = _int_check(0, optional=True)
_BOOL = _value_check("true or false", lambda value: isinstance(value, bool))
_NUMBER = _value_check("a number", _is_number)
_NON_NEGATIVE = _value_check("a number >= 0", lambda value: _is_number(value) and value >= 0)
# A dropout of 1 drops everything: torch gives zeros, and bilm-tf's keep probability of 0 is refused by TensorFlow.
_DROPOUT = _value_check("a number in [0, 1)", lambda value: _is_number(value) and 0 <= value < 1)
_CLIP = _value_check("a positive number", lambda value: _is_number(value) and value > 0, optional=True)
# (a filter's width is checked against max_characters_per_token once every field fits)
_FILTERS = _value_check("a non-empty list of [width, count] pairs of positive integers", _is_filter_list)
# (text_elmo owns the limits: the tokenizer and the numpy front end check them too)
_WORD_WIDTH = _value_check(
    f"an integer from {MAX_CHARACTERS_PER_TOKEN.start} to {MAX_CHARACTERS_PER_TOKEN.stop - 1}",
    lambda value: _is_int(value) and value in MAX_CHARACTERS_PER_TOKEN,
)
_DICT = _value_check("a dict (JSON object)", lambda value: isinstance(value, dict), optional=True)
_LAYER_LIST = _list_check("a list of layer indices", _is_int)
_NUMBER_LIST = _list_check("a list of numbers", _is_number)


def _one_line_errors(cls: type) -> type:
    """`@strict`'s refusals as one ValueError line, "ElmoConfig: FIELD must be EXPECTED, got VALUE": strict's own say
    "Validation error for field ..." with the cause on a second line, are no ValueError, and test a value's type
    before the field's check, whose message says what the field may hold."""
    strict_setattr, strict_validate = cls.__setattr__, cls.validate

    def __setattr__(self, name: str, value: Any) -> None:
        try:
            strict_setattr(self, name, value)
        except StrictDataclassFieldValidationError as error:
            try:
                check_field(name, value)
            except ValueError as refusal:
                raise ValueError(f"ElmoConfig: {name} {refusal}") from None
            raise ValueError(f"ElmoConfig: {name} {error.__cause__}") from None  # a type wrong for a base field

    @wraps(strict_validate)  # (keeps strict's mark on `validate`)
    def validate(self) -> None:
        try:
            strict_validate(self)
        except StrictDataclassClassValidationError as error:
            raise ValueError(f"ElmoConfig: {error.__cause__}") from None

    cls.__setattr__ = __setattr__
    cls.validate = validate
    return cls


def _task_head_field(check: Callable[[Any], None], default: Any) -> Any:
    """A field that only the task heads read (how they mix the layers, and the head itself): `TASK_HEAD_FIELDS`."""
    return validated_field(check, default=default, metadata={"task_head": True})


@_one_line_errors
@strict
class ElmoConfig(PreTrainedConfig):
    r"""Configuration of [`ElmoModel`]: the character CNN, highway layers and the two biLSTM stacks.

    The defaults describe the original released model. Each field corresponds to one `options.json` entry:

    | field | options.json |
    | --- | --- |
    | `char_vocab_size` | `char_cnn.n_characters` (262 in use: 261 trained rows plus the all-zero row of id 0) |
    | `max_characters_per_token` | `char_cnn.max_characters_per_token` |
    | `char_embedding_dim` | `char_cnn.embedding.dim` |
    | `char_cnn_filters` | `char_cnn.filters`, a list of `[width, number of filters]` |
    | `char_cnn_activation` | `char_cnn.activation` (`relu` or `tanh`) |
    | `num_highway_layers` | `char_cnn.n_highway` |
    | `projection_dim` | `lstm.projection_dim`: width P of the token layer and of each LSTM direction |
    | `cell_size` | `lstm.dim`: LSTM memory cells C |
    | `num_hidden_layers` | `lstm.n_layers` |
    | `cell_clip`, `proj_clip` | `lstm.cell_clip`, `lstm.proj_clip` (`None`: no clipping) |
    | `use_skip_connections` | `lstm.use_skip_connections` (residual on every LSTM layer but the first) |
    | `vocab_size` | `n_tokens_vocab`: words of the softmax used in LM training (`None` without one) |
    | `dropout` | `dropout`: LM training dropout |

    `lstm_forget_bias` is added to the forget gate at run time, as TensorFlow's `LSTMCell` does (bilm-tf
    weights store the bias without it; ELMoForManyLangs weights include it, so theirs is 0). Every output
    layer is `2 * projection_dim` wide (`hidden_size`). Training-only options of `options.json` (batch size,
    epochs, ...) are kept verbatim in `training_options`. `lstm_implementation`, a name of
    `kernels_elmo.LSTM_IMPLEMENTATIONS`, chooses the kernel that runs the LSTM stacks, not what they compute; like
    transformers' `attn_implementation` it is set per model (`from_pretrained(..., lstm_implementation=...)`) and
    not saved.

    The token layer can also be ELMoForManyLangs': a character vocabulary of code points (in the tokenizer,
    any `char_vocab_size`), other ids for the characters that build the `<S>`/`</S>` words (`bow_char_id`,
    `eow_char_id`, `bos_char_id`, `eos_char_id`, `char_pad_id`: the first slot, the last slot, the marker
    character of each sentence marker and the padding slots), and a word embedding of `word_vocab_size` x
    `word_embedding_dim` concatenated before the character features (with `bos_word_id`/`eos_word_id` for
    the markers). All character ids are the model's: 0 means "no word", its embedding row stays zero.

    How the task heads mix the layers (see the README's table of schemes):

    | field | meaning |
    | --- | --- |
    | `mix_mode` | `scalar_mix`, `average`, `layer`, `concat` or `per_token` (see `ElmoLayerMix`) |
    | `mix_layers` | which layers enter (0 = token layer), `None` for all; the heads run none above the highest |
    | `mix_layer_norm` | normalise each layer with one mean and variance over the batch's words (scalar_mix) |
    | `mix_l2_coefficient` | lambda of the penalty `lambda * sum(w ** 2)` added to the loss (scalar_mix) |
    | `mix_dropout` | dropout on the mixed vectors |
    | `mix_initial_weights` | starting softmax weights per entering layer (scalar_mix; default 0: uniform) |
    | `mix_trainable` | learn the weights and scale (scalar_mix, per_token); False keeps the initial ones |
    | `num_output_representations` | independent mixes: the first feeds the task encoder, a second joins its output |

    Task heads: `freeze_bilm` (default True, as in the paper: the biLM's weights never change),
    `task_encoder` (`bilstm` or `none`), `task_hidden_size`, `task_num_layers`, `classifier_dropout`.
    """

    model_type = "elmo"

    char_vocab_size: int = validated_field(_POSITIVE_INT, default=BILM_TF_CHAR_VOCAB_SIZE)
    # bow, eow and a character: the shortest word, and each sentence marker
    max_characters_per_token: int = validated_field(_WORD_WIDTH, default=50)
    char_embedding_dim: int = validated_field(_POSITIVE_INT, default=16)
    char_cnn_filters: Sequence[Sequence[int]] = validated_field(_FILTERS, default=ORIGINAL_CHAR_CNN_FILTERS)
    char_cnn_activation: str = validated_field(_choice_check(CHAR_CNN_ACTIVATIONS), default="relu")
    num_highway_layers: int = validated_field(_COUNT, default=2)
    projection_dim: int = validated_field(_POSITIVE_INT, default=512)
    cell_size: int = validated_field(_POSITIVE_INT, default=4096)
    num_hidden_layers: int = validated_field(_POSITIVE_INT, default=2)
    cell_clip: float | int | None = validated_field(_CLIP, default=3.0)
    proj_clip: float | int | None = validated_field(_CLIP, default=3.0)
    use_skip_connections: bool = validated_field(_BOOL, default=True)
    lstm_forget_bias: float | int = validated_field(_NUMBER, default=1.0)
    lstm_implementation: str = validated_field(_choice_check(LSTM_IMPLEMENTATIONS), default="auto")
    # (the character and word ids' upper bounds depend on the vocabulary sizes: checked once every field fits)
    bow_char_id: int = validated_field(_POSITIVE_INT, default=BILM_TF_CHAR_IDS["bow"])
    eow_char_id: int = validated_field(_POSITIVE_INT, default=BILM_TF_CHAR_IDS["eow"])
    bos_char_id: int = validated_field(_POSITIVE_INT, default=BILM_TF_CHAR_IDS["bos"])
    eos_char_id: int = validated_field(_POSITIVE_INT, default=BILM_TF_CHAR_IDS["eos"])
    char_pad_id: int = validated_field(_POSITIVE_INT, default=BILM_TF_CHAR_IDS["pad"])
    word_vocab_size: int = validated_field(_COUNT, default=0)
    word_embedding_dim: int = validated_field(_COUNT, default=0)
    bos_word_id: int | None = validated_field(_OPTIONAL_ID, default=None)
    eos_word_id: int | None = validated_field(_OPTIONAL_ID, default=None)
    vocab_size: int | None = validated_field(_int_check(1, optional=True), default=None)
    dropout: float | int = validated_field(_DROPOUT, default=0.1)
    training_options: dict | None = validated_field(_DICT, default=None)
    initializer_range: float | int = validated_field(_NON_NEGATIVE, default=0.02)
    mix_mode: str = _task_head_field(_choice_check(MIX_MODES), default="scalar_mix")
    mix_layers: Sequence[int] | None = _task_head_field(_LAYER_LIST, default=None)
    mix_layer_norm: bool = _task_head_field(_BOOL, default=False)
    mix_l2_coefficient: float | int = _task_head_field(_NON_NEGATIVE, default=0.0)
    mix_dropout: float | int = _task_head_field(_DROPOUT, default=0.5)
    mix_initial_weights: Sequence[float | int] | None = _task_head_field(_NUMBER_LIST, default=None)
    mix_trainable: bool = _task_head_field(_BOOL, default=True)
    num_output_representations: int = _task_head_field(_POSITIVE_INT, default=1)
    freeze_bilm: bool = _task_head_field(_BOOL, default=True)
    task_encoder: str = _task_head_field(_choice_check(TASK_ENCODERS), default="bilstm")
    task_hidden_size: int = _task_head_field(_POSITIVE_INT, default=200)
    task_num_layers: int = _task_head_field(_POSITIVE_INT, default=1)
    classifier_dropout: float | int = _task_head_field(_DROPOUT, default=0.1)

    def __post_init__(self, **kwargs) -> None:
        # Each field has passed its check as given; now the forms it is kept in (clips as floats, lists for tuples).
        self.char_cnn_filters = [list(pair) for pair in self.char_cnn_filters]
        self.cell_clip = None if self.cell_clip is None else float(self.cell_clip)
        self.proj_clip = None if self.proj_clip is None else float(self.proj_clip)
        self.training_options = dict(self.training_options or {})
        self.mix_layers = None if self.mix_layers is None else list(self.mix_layers)
        if self.mix_initial_weights is not None:
            self.mix_initial_weights = [float(w) for w in self.mix_initial_weights]
        kwargs.setdefault("auto_map", dict(ELMO_AUTO_MAP))
        super().__post_init__(**kwargs)

    # Checks across fields: `@strict` runs every `validate_*` method once the fields are set.
    def validate_char_cnn_filters(self) -> None:
        widest = max(width for width, _ in self.char_cnn_filters)
        if widest > self.max_characters_per_token:
            raise ValueError(
                f"char_cnn_filters must be no wider than max_characters_per_token "
                f"({self.max_characters_per_token}), got a filter of width {widest}"
            )

    def validate_word_embedding(self) -> None:
        if not self.word_embedding_dim:
            return
        if not self.word_vocab_size or self.bos_word_id is None or self.eos_word_id is None:
            raise ValueError("a word embedding needs word_vocab_size, bos_word_id and eos_word_id")
        if max(self.bos_word_id, self.eos_word_id) >= self.word_vocab_size:
            raise ValueError(
                f"bos_word_id and eos_word_id must lie in 0..{self.word_vocab_size - 1} (word_vocab_size "
                f"{self.word_vocab_size}), got {self.bos_word_id} and {self.eos_word_id}"
            )

    def validate_special_char_ids(self) -> None:
        if not all(0 < char_id < self.char_vocab_size for char_id in self.special_char_ids.values()):
            raise ValueError(f"special character ids {self.special_char_ids} must lie in 1..{self.char_vocab_size - 1}")

    def validate_mixing(self) -> None:
        layers = self.mixed_layers
        if not layers or len(set(layers)) != len(layers) or not all(0 <= x <= self.num_hidden_layers for x in layers):
            raise ValueError(
                f"mix_layers must name distinct layers in 0..{self.num_hidden_layers}, got {self.mix_layers}"
            )
        if self.mix_mode == "layer" and len(layers) != 1:
            raise ValueError(f"mix_mode='layer' takes exactly one layer in mix_layers, got {self.mix_layers}")
        if self.mix_initial_weights is not None and len(self.mix_initial_weights) != len(layers):
            raise ValueError(
                f"mix_initial_weights has {len(self.mix_initial_weights)} values for {len(layers)} mixed layers"
            )

    def to_dict(self) -> dict[str, Any]:
        # lstm_implementation is the loaded model's choice, not saved (as transformers' attn_implementation).
        output = super().to_dict()
        output.pop("lstm_implementation", None)
        return output

    @property
    def mixed_layers(self) -> list[int]:
        """The layers the heads mix, in order (all `num_hidden_layers + 1` when `mix_layers` is None)."""
        return list(range(self.num_hidden_layers + 1)) if self.mix_layers is None else list(self.mix_layers)

    @property
    def mix_depth(self) -> int:
        """How many biLSTM layers the heads' mix reads: up to the highest mixed layer (0 for the token layer
        alone). The task heads, their feature cache and the sentence encoder run none above it, passing it to
        [`ElmoModel`] as `num_layers`; `ElmoModel` on its own computes every layer, whatever the mix."""
        return max(self.mixed_layers)

    @property
    def mix_output_size(self) -> int:
        """Width of one mixed representation."""
        width = 2 * self.projection_dim
        return width * len(self.mixed_layers) if self.mix_mode == "concat" else width

    @property
    def special_char_ids(self) -> dict[str, int]:
        """The ids of the characters that frame words and build the sentence markers (`bow`, `eow`, `bos`, `eos`,
        `pad`), as `text_elmo.framed_char_ids` and the tokenizer's `special_char_ids` take them."""
        return {
            "bow": self.bow_char_id,
            "eow": self.eow_char_id,
            "bos": self.bos_char_id,
            "eos": self.eos_char_id,
            "pad": self.char_pad_id,
        }

    @property
    def hidden_size(self) -> int:
        """Width of every output layer: the forward and backward halves (or the token vector twice)."""
        return 2 * self.projection_dim

    @property
    def num_filters(self) -> int:
        """Width F of the character CNN output, the sum of all filter counts."""
        return sum(count for _, count in self.char_cnn_filters)


_DECLARED_FIELDS = {field.name: field for field in fields(ElmoConfig)}
# The fields ElmoConfig adds to PreTrainedConfig's, in the order declared.
ELMO_CONFIG_FIELDS = tuple(name for name in _DECLARED_FIELDS if name not in {f.name for f in fields(PreTrainedConfig)})
# The fields that only the task heads read; every other field shapes the biLM, so changing one of these leaves the
# biLM's layers as they were.
TASK_HEAD_FIELDS = tuple(name for name, field in _DECLARED_FIELDS.items() if field.metadata.get("task_head"))


def check_field(name: str, value: Any) -> None:
    """Raise ValueError("must be EXPECTED, got VALUE") where `value` does not fit the check declared with
    ElmoConfig's field `name` (nothing to check for PreTrainedConfig's fields)."""
    for check in _DECLARED_FIELDS[name].metadata.get("validator", []):
        check(value)
