"""`elmo-convert allennlp`: options.json + weights.hdf5 -> a transformers model folder."""

from __future__ import annotations

from pathlib import Path

from modeling_elmo import ElmoConfig, ElmoModel, ElmoTokenizer

from .allennlp_hdf5 import read_allennlp_weights
from .errors import ConversionError
from .options import config_from_options, read_options
from .output_folder import atomic_output_folder

__all__ = ["convert_allennlp", "load_allennlp_model"]


def load_allennlp_model(options_file: str | Path, weights_file: str | Path, *, progress: bool = True) -> ElmoModel:
    """An `ElmoModel` holding the weights of an original options.json + weights.hdf5 pair."""
    config = config_from_options(read_options(options_file), source=str(options_file))
    return _model_from_state_dict(config, read_allennlp_weights(weights_file, config, progress=progress))


def _model_from_state_dict(config: ElmoConfig, state_dict: dict) -> ElmoModel:
    model = ElmoModel(config)
    result = model.load_state_dict(state_dict, strict=True)
    if result.missing_keys or result.unexpected_keys:  # a gap in the mapping itself, not in the user's input
        raise AssertionError(
            f"weight mapping incomplete: missing {result.missing_keys}, unexpected {result.unexpected_keys}"
        )
    return model.eval()


def convert_allennlp(
    options_file: str | Path, weights_file: str | Path, output: str | Path, *, overwrite: bool = False
) -> ElmoModel:
    """Convert and save model, tokenizer and code to `output` (atomically); returns the model."""
    if Path(output).exists() and not overwrite:  # fail before the slow part
        raise ConversionError(f"{output} already exists: pass --overwrite to replace it")
    model = load_allennlp_model(options_file, weights_file)
    with atomic_output_folder(output, overwrite=overwrite) as folder:
        model.save_pretrained(folder)
        ElmoTokenizer(max_characters_per_token=model.config.max_characters_per_token).save_pretrained(folder)
    return model
