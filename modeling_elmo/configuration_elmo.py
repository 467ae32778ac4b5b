"""Configuration of an ELMo bidirectional language model (Peters et al., 2018)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from transformers import PreTrainedConfig

__all__ = [
    "BILM_TF_CHAR_IDS",
    "BILM_TF_CHAR_VOCAB_SIZE",
    "ORIGINAL_CHAR_CNN_FILTERS",
    "TASK_HEAD_FIELDS",
    "ElmoConfig",
    "framed_char_ids",
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
BILM_TF_CHAR_IDS = {"bos": 257, "eos": 258, "bow": 259, "eow": 260, "pad": 261}
BILM_TF_CHAR_VOCAB_SIZE = max(BILM_TF_CHAR_IDS.values()) + 1


def framed_char_ids(
    body: Sequence[int], special_char_ids: Mapping[str, int], max_characters_per_token: int
) -> list[int]:
    """The `max_characters_per_token` character ids of one word: `[bow, *body, eow, pad, ...]` with the ids of
    `special_char_ids` (`bow`, `eow`, `pad`); `body` (at most `max_characters_per_token - 2` ids) is the word's
    characters, or the `bos`/`eos` character alone for a sentence marker."""
    ids = [special_char_ids["bow"], *body, special_char_ids["eow"]]
    return ids + [special_char_ids["pad"]] * (max_characters_per_token - len(ids))


CHAR_CNN_ACTIVATIONS = ("relu", "tanh")
MIX_MODES = ("scalar_mix", "average", "layer", "concat", "per_token")
TASK_ENCODERS = ("bilstm", "none")
# The fields that only the task heads read (how they mix the layers, and the head itself); every other field
# shapes the biLM, so changing one of these leaves the biLM's layers as they were.
TASK_HEAD_FIELDS = (
    "mix_mode",
    "mix_layers",
    "mix_layer_norm",
    "mix_l2_coefficient",
    "mix_dropout",
    "mix_initial_weights",
    "mix_trainable",
    "num_output_representations",
    "freeze_bilm",
    "task_encoder",
    "task_hidden_size",
    "task_num_layers",
    "classifier_dropout",
)


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
    epochs, ...) are kept verbatim in `training_options`.

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
    | `mix_layers` | which layers enter (0 = token layer), `None` for all; none above the highest is computed |
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

    def __init__(
        self,
        *,
        char_vocab_size: int = BILM_TF_CHAR_VOCAB_SIZE,
        max_characters_per_token: int = 50,
        char_embedding_dim: int = 16,
        char_cnn_filters: Sequence[Sequence[int]] = ORIGINAL_CHAR_CNN_FILTERS,
        char_cnn_activation: str = "relu",
        num_highway_layers: int = 2,
        projection_dim: int = 512,
        cell_size: int = 4096,
        num_hidden_layers: int = 2,
        cell_clip: float | None = 3.0,
        proj_clip: float | None = 3.0,
        use_skip_connections: bool = True,
        lstm_forget_bias: float = 1.0,
        bow_char_id: int = BILM_TF_CHAR_IDS["bow"],
        eow_char_id: int = BILM_TF_CHAR_IDS["eow"],
        bos_char_id: int = BILM_TF_CHAR_IDS["bos"],
        eos_char_id: int = BILM_TF_CHAR_IDS["eos"],
        char_pad_id: int = BILM_TF_CHAR_IDS["pad"],
        word_vocab_size: int = 0,
        word_embedding_dim: int = 0,
        bos_word_id: int | None = None,
        eos_word_id: int | None = None,
        vocab_size: int | None = None,
        dropout: float = 0.1,
        training_options: dict | None = None,
        initializer_range: float = 0.02,
        mix_mode: str = "scalar_mix",
        mix_layers: Sequence[int] | None = None,
        mix_layer_norm: bool = False,
        mix_l2_coefficient: float = 0.0,
        mix_dropout: float = 0.5,
        mix_initial_weights: Sequence[float] | None = None,
        mix_trainable: bool = True,
        num_output_representations: int = 1,
        freeze_bilm: bool = True,
        task_encoder: str = "bilstm",
        task_hidden_size: int = 200,
        task_num_layers: int = 1,
        classifier_dropout: float = 0.1,
        **kwargs,
    ) -> None:
        if char_cnn_activation not in CHAR_CNN_ACTIVATIONS:
            raise ValueError(f"char_cnn_activation must be one of {CHAR_CNN_ACTIVATIONS}, got {char_cnn_activation!r}")
        if num_hidden_layers < 1:
            raise ValueError(f"num_hidden_layers must be at least 1, got {num_hidden_layers}")
        filters = [[int(width), int(count)] for width, count in char_cnn_filters]
        if not filters or any(w < 1 or w > max_characters_per_token or n < 1 for w, n in filters):
            raise ValueError(
                f"char_cnn_filters must be a non-empty list of [width, count] with 1 <= width <= "
                f"{max_characters_per_token} and count >= 1, got {char_cnn_filters!r}"
            )
        if word_embedding_dim and (not word_vocab_size or bos_word_id is None or eos_word_id is None):
            raise ValueError("a word embedding needs word_vocab_size, bos_word_id and eos_word_id")
        self.char_vocab_size = char_vocab_size
        self.max_characters_per_token = max_characters_per_token
        self.char_embedding_dim = char_embedding_dim
        self.char_cnn_filters = filters
        self.char_cnn_activation = char_cnn_activation
        self.num_highway_layers = num_highway_layers
        self.projection_dim = projection_dim
        self.cell_size = cell_size
        self.num_hidden_layers = num_hidden_layers
        self.cell_clip = None if cell_clip is None else float(cell_clip)
        self.proj_clip = None if proj_clip is None else float(proj_clip)
        self.use_skip_connections = use_skip_connections
        self.lstm_forget_bias = lstm_forget_bias
        self.bow_char_id = bow_char_id
        self.eow_char_id = eow_char_id
        self.bos_char_id = bos_char_id
        self.eos_char_id = eos_char_id
        self.char_pad_id = char_pad_id
        self.word_vocab_size = word_vocab_size
        self.word_embedding_dim = word_embedding_dim
        self.bos_word_id = bos_word_id
        self.eos_word_id = eos_word_id
        self.vocab_size = vocab_size
        self.dropout = dropout
        self.training_options = dict(training_options or {})
        self.initializer_range = initializer_range
        self.mix_mode = mix_mode
        self.mix_layers = None if mix_layers is None else [int(layer) for layer in mix_layers]
        self.mix_layer_norm = mix_layer_norm
        self.mix_l2_coefficient = mix_l2_coefficient
        self.mix_dropout = mix_dropout
        self.mix_initial_weights = None if mix_initial_weights is None else [float(w) for w in mix_initial_weights]
        self.mix_trainable = mix_trainable
        self.num_output_representations = num_output_representations
        self.freeze_bilm = freeze_bilm
        self.task_encoder = task_encoder
        self.task_hidden_size = task_hidden_size
        self.task_num_layers = task_num_layers
        self.classifier_dropout = classifier_dropout
        if not all(0 < char_id < char_vocab_size for char_id in self.special_char_ids.values()):
            raise ValueError(f"special character ids {self.special_char_ids} must lie in 1..{char_vocab_size - 1}")
        self._check_mixing()
        kwargs.setdefault("auto_map", dict(ELMO_AUTO_MAP))
        super().__init__(**kwargs)

    def _check_mixing(self) -> None:
        if self.mix_mode not in MIX_MODES:
            raise ValueError(f"mix_mode must be one of {MIX_MODES}, got {self.mix_mode!r}")
        if self.task_encoder not in TASK_ENCODERS:
            raise ValueError(f"task_encoder must be one of {TASK_ENCODERS}, got {self.task_encoder!r}")
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
        if self.num_output_representations < 1:
            raise ValueError(f"num_output_representations must be at least 1, got {self.num_output_representations}")

    @property
    def mixed_layers(self) -> list[int]:
        """The layers the heads mix, in order (all `num_hidden_layers + 1` when `mix_layers` is None)."""
        return list(range(self.num_hidden_layers + 1)) if self.mix_layers is None else list(self.mix_layers)

    @property
    def computed_layers(self) -> int:
        """How many biLSTM layers the biLM runs: none above the highest mixed layer."""
        return max(self.mixed_layers)

    @property
    def mix_output_size(self) -> int:
        """Width of one mixed representation."""
        width = 2 * self.projection_dim
        return width * len(self.mixed_layers) if self.mix_mode == "concat" else width

    @property
    def special_char_ids(self) -> dict[str, int]:
        """The ids of the characters that frame words and build the sentence markers (`bow`, `eow`, `bos`, `eos`,
        `pad`), as [`framed_char_ids`] and the tokenizer's `special_char_ids` take them."""
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
