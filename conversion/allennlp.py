"""AllenNLP/bilm-tf files <-> transformers model folders: `elmo-convert allennlp` and `to-allennlp`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from elmo_transformers.common.atomic_output import atomic_output_folder
from elmo_transformers.common.checksums import record_checksums
from elmo_transformers.common.disk_space import require_room
from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.model_folder import require_model_folder
from elmo_transformers.common.options_json import config_from_options, options_from_config, read_options
from modeling_elmo import ElmoConfig, ElmoModel

from .allennlp_hdf5 import read_allennlp_weights, write_allennlp_weights
from .convert_options import AllennlpOptions, ModelFolderOptions, ToAllennlpOptions
from .converted_model_card import SourceDescription, model_page_source
from .saving import conversion_summary, output_options, save_converted_folder, weight_bytes
from .variants import VARIANTS

__all__ = [
    "convert_allennlp",
    "export_allennlp",
    "load_allennlp_model",
    "load_converted_model",
    "run_conversion",
    "run_convert",
    "run_export",
]


def load_allennlp_model(
    options: dict[str, Any], weights_file: str | Path, *, source: str = "options.json", progress: bool = True
) -> ElmoModel:
    """An `ElmoModel` holding the weights of an original weights.hdf5 described by `options`."""
    config = config_from_options(options, source=source)
    model = ElmoModel(config)
    state_dict = read_allennlp_weights(weights_file, config, progress=progress)
    result = model.load_state_dict(state_dict, strict=False)
    if result.missing_keys or result.unexpected_keys:  # a gap in the mapping itself, not in the user's input
        raise AssertionError(f"mapping incomplete: missing {result.missing_keys}, unexpected {result.unexpected_keys}")
    return model.eval()


def load_converted_model(folder: str | Path) -> ElmoModel:
    """The `ElmoModel` of a folder this package wrote, with a clear error for anything else."""
    require_model_folder(folder, ConversionError)
    return ElmoModel.from_pretrained(folder).eval()


def convert_allennlp(
    options: dict[str, Any],
    weights_file: str | Path,
    output: str | Path,
    *,
    source: SourceDescription,
    options_source: str = "options.json",
    repo_id: str | None = None,
    overwrite: bool = False,
    space_check: bool = True,
) -> tuple[ElmoModel, float]:
    """Convert and save model, tokenizer, code and model page to `output` (atomically).

    Returns the saved model, reloaded, and its parity: the largest difference at any layer between the saved
    float32 model and a float64 computation from the source file. `repo_id` (default: the folder name) is
    what the model page's snippets load.
    """
    return save_converted_folder(
        lambda: load_allennlp_model(options, weights_file, source=options_source),
        output,
        source=source,
        repo_id=repo_id,
        overwrite=overwrite,
        space_check=space_check,
    )


def _check_exportable(config: ElmoConfig, folder: str | Path) -> None:
    """bilm-tf's format holds UTF-8 byte characters, no word embedding, and the forget bias added at run time."""
    default = ElmoConfig()
    problems = []
    if config.word_embedding_dim:
        problems.append("a word embedding")
    special_ids = ("char_vocab_size", "bow_char_id", "eow_char_id", "bos_char_id", "eos_char_id", "char_pad_id")
    if any(getattr(config, name) != getattr(default, name) for name in special_ids):
        problems.append("a character vocabulary other than UTF-8 bytes")
    if config.lstm_forget_bias != default.lstm_forget_bias:
        problems.append(f"a forget bias of {config.lstm_forget_bias} instead of 1.0 added at run time")
    if problems:
        raise ConversionError(
            f"{folder} cannot be written in the AllenNLP/bilm-tf format: it has {', '.join(problems)}"
        )


def export_allennlp(
    model_folder: str | Path, output: str | Path, *, overwrite: bool = False, space_check: bool = True
) -> Path:
    """Write `options.json` + `weights.hdf5` in the original layout, and their SHA256SUMS, to the folder `output`
    (refused, unless `space_check` is off, where the disk has too little room for the weights)."""
    model = load_converted_model(model_folder)
    _check_exportable(model.config, model_folder)
    with atomic_output_folder(output, overwrite=overwrite, inputs=(model_folder,)) as folder:
        require_room(output, weight_bytes(model), "the weights.hdf5", space_check=space_check)
        (folder / "options.json").write_text(json.dumps(options_from_config(model.config), indent=2) + "\n")
        write_allennlp_weights(folder / "weights.hdf5", model.state_dict(), model.config)
        record_checksums(folder)
    return Path(output)


def run_convert(options: AllennlpOptions) -> str:
    """`elmo-convert allennlp --options` or `--variant`, with `--weights` (an `--archive` is `nlpl_archive`'s)."""
    if not options.weights:
        raise ConversionError("--weights is needed with --options or --variant (an --archive holds its own)")
    weights = Path(options.weights)
    if options.variant:
        variant = VARIANTS[options.variant]
        options_json, options_source = variant.options, f"variant {options.variant}"
        source = model_page_source(
            options, f"the AllenNLP release {variant.release}", (weights,), variant.training_data
        )
    else:
        options_json, options_source = read_options(options.options), options.options
        source = model_page_source(
            options,
            f"the ELMo weights {weights.name}",
            (weights,),
            "the corpus its source was trained on (not recorded in the source files)",
            options_file=options.options,
        )
    return run_conversion(options, options_json, weights, source, options_source, weights)


def run_conversion(
    options: ModelFolderOptions,
    options_json: dict[str, Any],
    weights: Path,
    source: SourceDescription,
    options_source: str,
    named: Path,
) -> str:
    """Convert `weights` as `options_json` describe them to the options' output; the summary line names `named`."""
    model, parity = convert_allennlp(
        options_json,
        weights,
        options.output,
        source=source,
        options_source=options_source,
        **output_options(options),
    )
    return conversion_summary(named, options.output, model, parity)


def run_export(options: ToAllennlpOptions) -> str:
    output = export_allennlp(
        options.model, options.output, overwrite=options.overwrite, space_check=options.space_check
    )
    return f"Exported {options.model} -> {output / 'options.json'}, {output / 'weights.hdf5'}"
