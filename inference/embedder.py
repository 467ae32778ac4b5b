"""Load an ELMo model folder and turn batches of sentences into float32 NumPy vectors of the chosen layers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from transformers import PreTrainedConfig

import modeling_elmo
from modeling_elmo import ElmoModel, ElmoTokenizer

from .errors import EmbedError, first_line

__all__ = ["DTYPES", "LAYER_CHOICES", "Embedder", "default_device", "resolve_model"]

LAYER_CHOICES = ("all", "top", "average", "mix")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_model(model: str | None) -> str:
    """The model to load: `model`, or `modeling_elmo.DEFAULT_MODEL` when none is given (and one is defined)."""
    if model is not None:
        return model
    default = getattr(modeling_elmo, "DEFAULT_MODEL", None)
    if default is None:
        raise EmbedError("there is no default model yet: pass --model DIR, a model folder written by elmo-convert")
    return str(default)


def default_device() -> str:
    """The default device: "cuda" where a GPU is available, else "cpu"."""
    return "cuda" if torch.cuda.is_available() else "cpu"


class Embedder:
    """An ELMo model and its tokenizer on one device, giving the vectors of `layers` for batches of sentences.

    `layers` is "all" (every layer: L+1 vectors per word), "top" (the top biLSTM layer) or "average" (the mean
    of the L+1 layers); "mix" is refused, since no model has mixing weights yet. Each word's vectors are
    `width` = 2 * projection_dim wide.
    """

    def __init__(self, model: str, *, layers: str, dtype: str = "float32", device: str | None = None) -> None:
        if layers not in LAYER_CHOICES:
            raise EmbedError(f"--layers must be one of {', '.join(LAYER_CHOICES)}, got {layers!r}")
        self.layers = layers
        self.model, unused_weights = _load_model(model, DTYPES[dtype])
        if layers == "mix":
            _refuse_mix(model, [name for name in unused_weights if "mix" in name.lower()])
        self.tokenizer = ElmoTokenizer.from_pretrained(model)
        device = device or default_device()
        try:
            self.device = torch.device(device)
            self.model.to(self.device)
        except (RuntimeError, AssertionError) as error:
            raise EmbedError(f"--device {device}: {first_line(error)}") from None
        self.width = 2 * self.model.config.projection_dim
        self.num_layers = self.model.config.num_hidden_layers + 1

    def shape(self, words: int) -> tuple[int, ...]:
        """Shape of one sentence's output: (L+1, words, width) for "all", (words, width) otherwise."""
        return (self.num_layers, words, self.width) if self.layers == "all" else (words, self.width)

    def embed(self, sentences: Sequence[Sequence[str]]) -> list[np.ndarray]:
        """The float32 vectors of each sentence (a non-empty list of words), of shape `self.shape(len(words))`.

        The sentences are padded into one batch; the model computes every row on its own (no state is carried
        from sentence to sentence), so a sentence gets the same vectors in any batch.
        """
        inputs = self.tokenizer(
            [list(words) for words in sentences], is_split_into_words=True, padding=True, return_tensors="pt"
        ).to(self.device)
        with torch.inference_mode():
            output = self.model(**inputs, output_hidden_states=self.layers != "top")
            if self.layers == "top":
                vectors = output.last_hidden_state.float()  # (batch, words, width)
            else:
                vectors = torch.stack(output.hidden_states, dim=1).float()  # (batch, L+1, words, width)
                if self.layers == "average":
                    vectors = vectors.mean(dim=1)  # (batch, words, width)
            vectors = vectors.cpu().numpy()
        return [vectors[row, ..., : len(words), :] for row, words in enumerate(sentences)]


def _load_model(model: str, dtype: torch.dtype) -> tuple[ElmoModel, list[str]]:
    """The model of a folder (or Hub repository) written by elmo-convert, and the names of the weights in its
    files that the model does not use; a one-line error for anything else."""
    if Path(model).exists() and not (Path(model) / "config.json").is_file():
        raise EmbedError(f"{model}: not a model folder (no config.json)")
    try:
        config, _ = PreTrainedConfig.get_config_dict(model)
        if config.get("model_type") != "elmo":
            raise EmbedError(f"{model}: model_type is {config.get('model_type')!r}, expected 'elmo'")
        loaded, info = ElmoModel.from_pretrained(model, dtype=dtype, output_loading_info=True)
    except OSError as error:
        raise EmbedError(f"{model}: cannot load the model: {first_line(error)}") from None
    if info["missing_keys"]:
        raise EmbedError(f"{model}: the weights lack {', '.join(sorted(info['missing_keys']))}")
    return loaded.eval(), sorted(info["unexpected_keys"])


def _refuse_mix(model: str, mix_weights: list[str]) -> None:
    """`--layers mix` needs learned mixing weights: the model has none, or has some this command cannot apply."""
    if mix_weights:
        raise EmbedError(
            f"--layers mix is not available: {model} has mixing weights ({', '.join(mix_weights)})"
            " but elmo-embed cannot apply them yet; use --layers all, top or average"
        )
    raise EmbedError(
        f"--layers mix is not available: the model {model} has no mixing weights; use --layers all, top or average"
    )
