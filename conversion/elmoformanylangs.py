"""ELMoForManyLangs (HIT-SCIR, 44 languages) model folders -> transformers model folders.

Their token layer reads code points through `char.dic` and adds a word embedding (`word.dic`) before the
projection; their LSTMs are AllenNLP's (gates i, f, g, o, forget bias stored in the weights), their
highway AllenNLP's (the gate weighs the input). All of it maps onto `ElmoModel` as configuration:
`weight_mappings` lists every tensor with its shape and how it maps; see the README's Formats table.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.options_json import OptionField, field_values
from elmo_transformers.common.safe_load import load_tensors
from modeling_elmo import ORIGINAL_CHAR_CNN_FILTERS, ElmoConfig, ElmoModel, ElmoTokenizer
from modeling_elmo.configuration_elmo import shown_as_json

from .convert_options import ElmoForManyLangsOptions, ModelFolderOptions
from .converted_model_card import SourceDescription, model_page_source
from .saving import conversion_summary, output_options, save_converted_folder
from .weight_mapping import WeightMapping, character_embedding, check_finite, unchanged

__all__ = [
    "RELEASED_NETWORK_CONFIG",
    "convert_elmoformanylangs",
    "load_elmoformanylangs_model",
    "run",
    "run_conversion",
    "weight_mappings",
]

# The network config every released model names (their configs/cnn_50_100_512_4096_sample.json). Released
# folders point at it with the authors' absolute path, so it is used when the folder does not hold it.
RELEASED_NETWORK_CONFIG: dict[str, Any] = {
    "encoder": {"name": "elmo", "projection_dim": 512, "cell_clip": 3, "proj_clip": 3, "dim": 4096, "n_layers": 2},
    "token_embedder": {
        "name": "cnn",
        "activation": "relu",
        "filters": [list(width_and_count) for width_and_count in ORIGINAL_CHAR_CNN_FILTERS],
        "n_highway": 2,
        "word_dim": 100,
        "char_dim": 50,
        "max_characters_per_token": 50,
    },
    "classifier": {"name": "sampled_softmax", "n_samples": 8192},
    "dropout": 0.1,
}
# Where the network config has each `ElmoConfig` field it gives (the rest come from the dictionaries, or are
# fixed by their code: AllenNLP's skip connections and forget bias), as their loader reads it: an entry it reads
# with `.get` has a default.
_NETWORK_FIELDS = (
    OptionField(("encoder", "projection_dim"), "projection_dim"),
    OptionField(("encoder", "dim"), "cell_size"),
    OptionField(("encoder", "n_layers"), "num_hidden_layers"),
    # their 0 means no clipping
    OptionField(("encoder", "cell_clip"), "cell_clip", default=None, to_config=lambda clip: clip or None),
    OptionField(("encoder", "proj_clip"), "proj_clip", default=None, to_config=lambda clip: clip or None),
    OptionField(("token_embedder", "max_characters_per_token"), "max_characters_per_token"),
    OptionField(("token_embedder", "char_dim"), "char_embedding_dim"),
    OptionField(("token_embedder", "filters"), "char_cnn_filters"),
    OptionField(("token_embedder", "activation"), "char_cnn_activation"),
    OptionField(("token_embedder", "n_highway"), "num_highway_layers"),
    OptionField(("token_embedder", "word_dim"), "word_embedding_dim", default=0, to_config=lambda dim: dim or 0),
    OptionField(("dropout",), "dropout", default=0.1),
)
# How errors name the network config used where the folder holds none.
_RELEASED_NETWORK_SOURCE = "the released network config (cnn_50_100_512_4096_sample.json)"
_CHAR_SPECIALS = ("<bos>", "<eos>", "<oov>", "<pad>", "<bow>", "<eow>")
_WORD_SPECIALS = ("<oov>", "<bos>", "<eos>")
# Their gate blocks are i, f, g, o; ours are TensorFlow's i, j(=g), f, o. The permutation is its own inverse.
_GATE_ORDER = (0, 2, 1, 3)


def _reorder_gates(array: np.ndarray) -> np.ndarray:
    blocks = np.split(array, 4, axis=0)
    return np.concatenate([blocks[index] for index in _GATE_ORDER], axis=0)


def _read_dictionary(path: Path) -> dict[str, int]:
    """Their `token<TAB>id` files, read as their loader does (a line whose token strips away is U+3000)."""
    if not path.is_file():
        raise ConversionError(f"{path}: no such file")
    entries = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fields = line.strip().split("\t")
        if len(fields) == 1:
            fields.insert(0, "\u3000")
        try:
            token, index = fields
            entries[token] = int(index)
        except ValueError:
            raise ConversionError(f"{path}, line {number}: expected 'token<TAB>id', got {line!r:.80}") from None
    return entries


def _read_dictionaries(model_dir: Path) -> tuple[dict[str, int], dict[str, int] | None]:
    """The folder's character dictionary, and its word dictionary where it has one."""
    chars = _read_dictionary(model_dir / "char.dic")
    return chars, _read_dictionary(model_dir / "word.dic") if (model_dir / "word.dic").is_file() else None


def _read_json_object(path: Path, what: str) -> dict[str, Any]:
    """The JSON object in `path` (`what` says which file it is), or a ConversionError naming the file."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ConversionError(f"{path} is not a JSON {what}: {error}") from None
    if not isinstance(value, dict):
        raise ConversionError(f"{path}: expected a JSON object ({what}), got {type(value).__name__}")
    return value


def _network_config(model_dir: Path) -> tuple[dict[str, Any], str]:
    """The network config their `config.json` names, looked for the way their loader looks for it, and how errors
    name it (its path)."""
    training_config_path = model_dir / "config.json"
    if not training_config_path.is_file():
        raise ConversionError(f"{model_dir}: not an ELMoForManyLangs model folder (no config.json)")
    config_path = _read_json_object(training_config_path, "training config").get("config_path")
    if not isinstance(config_path, str) or not config_path:
        raise ConversionError(
            f"{training_config_path}: expected a 'config_path' entry naming the network config, got "
            f"{shown_as_json(config_path)}"
        )
    for candidate in (model_dir / config_path, model_dir / Path(config_path).name):
        if candidate.is_file():
            return _read_json_object(candidate, "network config"), str(candidate)
    return json.loads(json.dumps(RELEASED_NETWORK_CONFIG)), _RELEASED_NETWORK_SOURCE


def _load_state_dict(path: Path) -> dict[str, np.ndarray]:
    state_dict = load_tensors(path, ConversionError)  # never unpickle code from outside
    if not isinstance(state_dict, dict):
        raise ConversionError(f"{path}: expected a state dict, got {type(state_dict).__name__}")
    return {name: tensor.numpy() for name, tensor in state_dict.items()}


def _elmo_config(
    network: dict[str, Any], source: str, chars: dict[str, int], words: dict[str, int] | None
) -> ElmoConfig:
    """The `ElmoConfig` of the network config `network` (read from `source`) and the dictionaries."""
    fields = field_values(network, _NETWORK_FIELDS, source=source)
    encoder, embedder = network["encoder"].get("name"), network["token_embedder"].get("name")
    if encoder != "elmo" or embedder != "cnn":
        raise ConversionError(
            f"{source}: only the 'elmo' encoder with the 'cnn' token embedder is supported, got {encoder!r}"
            f" with {embedder!r}"
        )
    missing = [name for name in _CHAR_SPECIALS if name not in chars]
    if missing:
        raise ConversionError(f"char.dic lacks {', '.join(missing)}")
    word_dim = fields["word_embedding_dim"]
    if word_dim and words is None:
        raise ConversionError("the network has a word embedding (word_dim > 0) but the folder has no word.dic")
    try:
        return _config_with_dictionaries(fields, chars, words)
    except ValueError as error:
        raise ConversionError(f"{source}: {error}") from None


def _config_with_dictionaries(
    fields: dict[str, Any], chars: dict[str, int], words: dict[str, int] | None
) -> ElmoConfig:
    """`ElmoConfig` of the network config's `fields` and the ids the dictionaries give."""
    word_dim = fields["word_embedding_dim"]
    return ElmoConfig(
        **fields,
        char_vocab_size=max(chars.values()) + 2,  # +1 shift frees id 0 for "no word"
        use_skip_connections=True,
        lstm_forget_bias=0.0,
        # Their first slot holds the id of '<eow>' and the last that of '<bow>' (their frontend swaps the names).
        bow_char_id=chars["<eow>"] + 1,
        eow_char_id=chars["<bow>"] + 1,
        bos_char_id=chars["<bos>"] + 1,
        eos_char_id=chars["<eos>"] + 1,
        char_pad_id=chars["<pad>"] + 1,
        word_vocab_size=max(words.values()) + 1 if word_dim else 0,
        bos_word_id=words["<bos>"] if word_dim else None,
        eos_word_id=words["<eos>"] if word_dim else None,
    )


def weight_mappings(config: ElmoConfig) -> list[WeightMapping]:
    """Every tensor of `token_embedder.pkl` and `encoder.pkl` for `config`, and the parameters it becomes."""
    chars, char_dim = config.char_vocab_size, config.char_embedding_dim
    filters, projection, cells = config.num_filters, config.projection_dim, config.cell_size
    mappings = [character_embedding("char_emb_layer.embedding.weight", (chars - 1, char_dim))]
    if config.word_embedding_dim:
        mappings.append(
            unchanged(
                "word_emb_layer.embedding.weight",
                (config.word_vocab_size, config.word_embedding_dim),
                "char_encoder.word_embedding.weight",
            )
        )
    for index, (width, count) in enumerate(config.char_cnn_filters):
        target = f"char_encoder.convolutions.{index}"
        mappings.append(unchanged(f"convolutions.{index}.weight", (count, char_dim, width), f"{target}.weight"))
        mappings.append(unchanged(f"convolutions.{index}.bias", (count,), f"{target}.bias"))
    for index in range(config.num_highway_layers):
        target = f"char_encoder.highways.{index}"
        # Their rows [:F] are the transform; rows [F:] gate the input, ours gate the transform: negate them.
        for kind in ("weight", "bias"):
            mappings.append(
                WeightMapping(
                    f"highways._layers.{index}.{kind}",
                    (2 * filters, filters) if kind == "weight" else (2 * filters,),
                    (f"{target}.transform.{kind}", f"{target}.carry.{kind}"),
                    lambda array: (array[:filters], -array[filters:]),
                    lambda transform, carry: np.concatenate([transform, -carry]),
                )
            )
    mappings.append(
        unchanged(
            "projection.weight", (projection, config.word_embedding_dim + filters), "char_encoder.projection.weight"
        )
    )
    mappings.append(unchanged("projection.bias", (projection,), "char_encoder.projection.bias"))
    for stack in ("forward", "backward"):
        for layer in range(config.num_hidden_layers):
            source, target = f"{stack}_layer_{layer}", f"{stack}_lstm.layers.{layer}"
            for name, shape, parameter in (
                ("input_linearity.weight", (4 * cells, projection), "input_projection.weight"),
                ("state_linearity.weight", (4 * cells, projection), "state_projection.weight"),
                ("state_linearity.bias", (4 * cells,), "input_projection.bias"),
            ):
                mappings.append(
                    WeightMapping(
                        f"{source}.{name}",
                        shape,
                        (f"{target}.{parameter}",),
                        lambda array: (_reorder_gates(array),),
                        _reorder_gates,
                    )
                )
            mappings.append(
                unchanged(
                    f"{source}.state_projection.weight", (projection, cells), f"{target}.output_projection.weight"
                )
            )
    return mappings


def _tokenizer(config: ElmoConfig, chars: dict[str, int], words: dict[str, int] | None, folder: Path) -> ElmoTokenizer:
    """Their character and word lookups as an `ElmoTokenizer` (vocabularies written into `folder`)."""
    char_vocab = {char: index + 1 for char, index in chars.items() if char not in _CHAR_SPECIALS}
    (folder / "char_vocab.json").write_text(json.dumps(char_vocab, ensure_ascii=False), encoding="utf-8")
    word_vocab_file = None
    if config.word_embedding_dim:
        word_vocab_file = folder / "word_vocab.json"
        word_vocab_file.write_text(json.dumps(words, ensure_ascii=False), encoding="utf-8")
    return ElmoTokenizer(
        char_vocab_file=str(folder / "char_vocab.json"),
        word_vocab_file=None if word_vocab_file is None else str(word_vocab_file),
        max_characters_per_token=config.max_characters_per_token,
        special_char_ids={**config.special_char_ids, "oov": chars["<oov>"] + 1},
        special_word_ids={name.strip("<>"): words[name] for name in _WORD_SPECIALS} if word_vocab_file else None,
    )


def load_elmoformanylangs_model(model_dir: str | Path) -> tuple[ElmoModel, dict[str, int], dict[str, int] | None]:
    """The `ElmoModel` of an ELMoForManyLangs folder, with its character and word dictionaries."""
    model_dir = Path(model_dir)
    network, source = _network_config(model_dir)
    chars, words = _read_dictionaries(model_dir)
    config = _elmo_config(network, source, chars, words)
    tensors = _load_state_dict(model_dir / "token_embedder.pkl")
    tensors.update(_load_state_dict(model_dir / "encoder.pkl"))
    mappings = weight_mappings(config)
    unexpected = sorted(set(tensors) - {mapping.dataset for mapping in mappings})
    if unexpected:
        raise ConversionError(f"{model_dir}: tensor {unexpected[0]} is not described by the network config")
    state_dict = {}
    for mapping in mappings:
        if mapping.dataset not in tensors:
            raise ConversionError(f"{model_dir}: tensor {mapping.dataset} is missing")
        array = tensors[mapping.dataset]
        if array.shape != mapping.shape:
            raise ConversionError(
                f"{model_dir}: tensor {mapping.dataset} has shape {array.shape}, the config and dictionaries imply"
                f" {mapping.shape}"
            )
        check_finite(array, f"{model_dir}: tensor {mapping.dataset}")
        for name, converted in zip(mapping.parameters, mapping.to_model(array), strict=True):
            state_dict[name] = torch.from_numpy(np.ascontiguousarray(converted, dtype=np.float32))
    model = ElmoModel(config)
    model.load_state_dict(state_dict, strict=True)
    return model.eval(), chars, words


def convert_elmoformanylangs(
    model_dir: str | Path,
    output: str | Path,
    *,
    source: SourceDescription,
    repo_id: str | None = None,
    overwrite: bool = False,
    space_check: bool = True,
) -> tuple[ElmoModel, float]:
    """Convert and save an ELMoForManyLangs folder (atomically); returns the saved model and its parity."""
    return save_converted_folder(
        lambda: load_elmoformanylangs_model(model_dir)[0],
        output,
        source=source,
        repo_id=repo_id,
        overwrite=overwrite,
        space_check=space_check,
        tokenizer=lambda model, folder: _tokenizer(model.config, *_read_dictionaries(Path(model_dir)), folder),
    )


def run(options: ElmoForManyLangsOptions) -> str:
    model_dir = Path(options.model)
    source = model_page_source(
        options,
        f"the ELMoForManyLangs model {model_dir.resolve().name}",
        (model_dir / "token_embedder.pkl", model_dir / "encoder.pkl"),
        "the CoNLL 2018 shared task raw text of its language (20M words sampled from Wikipedia and Common Crawl)",
    )
    return run_conversion(options, model_dir, source, model_dir)


def run_conversion(options: ModelFolderOptions, model_dir: Path, source: SourceDescription, named: Path) -> str:
    """Convert the folder to the arguments' output (as `convert_elmoformanylangs`); the summary line names `named`."""
    model, parity = convert_elmoformanylangs(
        model_dir,
        options.output,
        source=source,
        **output_options(options),
    )
    return conversion_summary(named, options.output, model, parity)
