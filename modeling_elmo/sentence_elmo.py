"""ELMo as the first module of a sentence-transformers model: averaged ELMo sentence vectors.

`ElmoSentenceEncoder` splits text into words, runs the biLM and mixes its layers for every word
(`sentence_bert_config.json` says which: `layers`); sentence-transformers' `Pooling` module then takes the mean
over the sentence's words. `elmo-convert sentence-transformers` writes such a folder, with this file and the
model's code beside the weights, so that `SentenceTransformer(folder, trust_remote_code=True)` loads it where
this package is not installed.

This file needs sentence-transformers >= 6; nothing else in the package imports it, so the plain model never
does.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from transformers.dynamic_module_utils import get_relative_import_files

try:
    from sentence_transformers.base.modules import InputModule
except ImportError as error:  # sentence-transformers < 6 keeps its modules elsewhere, with another interface
    raise ImportError("ELMo's sentence-transformers module needs sentence-transformers>=6") from error

from .mixing_elmo import ElmoLayerMix
from .modeling_elmo import ElmoModel
from .tokenization_elmo import ElmoTokenizer

__all__ = ["LAYER_SCHEMES", "ElmoSentenceEncoder", "layer_scheme"]

# Named ways to combine the biLM's layers for each word: (ElmoLayerMix mode, mix_layers; None = all layers).
# "average" is the published averaged-ELMo baseline; "first-two" is Reimers & Gurevych's (2019) first two
# layers (the token layer and the first biLSTM layer; the top one is not run), here with equal fixed weights.
LAYER_SCHEMES = {
    "average": ("average", None),
    "first-two": ("average", [0, 1]),
    "concat": ("concat", None),
}


def layer_scheme(layers: str | int, num_hidden_layers: int) -> tuple[str, list[int] | None]:
    """(mix mode, mixed layers) for a `layers` setting: a name of `LAYER_SCHEMES` or one layer's index
    (0 = the token layer, j = the j-th biLSTM layer; a string of digits counts as the index)."""
    index = int(layers) if isinstance(layers, str) and layers.isdigit() else layers
    if isinstance(index, int) and not isinstance(index, bool) and 0 <= index <= num_hidden_layers:
        return "layer", [index]
    if isinstance(layers, str) and layers in LAYER_SCHEMES:
        return LAYER_SCHEMES[layers]
    raise ValueError(
        f"layers must be one of {', '.join(LAYER_SCHEMES)} or a layer index in 0..{num_hidden_layers} "
        f"(this model has {num_hidden_layers} biLSTM layers above the token layer 0), got {layers!r}"
    )


class ElmoSentenceEncoder(InputModule):
    """Text -> one mixed ELMo vector per word, `token_embeddings` (batch, words, D), with the word
    `attention_mask` (batch, words) for the `Pooling` module that follows.

    `layers` picks the mix (see `LAYER_SCHEMES`): D is `2 * projection_dim`, or `(num_hidden_layers + 1)` times
    that for `concat`. The biLM computes no layer above the highest one used. Words are `split_words`' (PTB-like);
    `<S>`/`</S>` are added inside the model, and padding never reaches the mean.
    """

    config_file_name = "sentence_bert_config.json"
    config_keys = ["layers"]
    save_in_root = True

    def __init__(
        self,
        model_name_or_path: str,
        layers: str | int = "average",
        *,
        model_kwargs: dict[str, Any] | None = None,
        processor_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.model = ElmoModel.from_pretrained(model_name_or_path, **(model_kwargs or {}))
        self.tokenizer = ElmoTokenizer.from_pretrained(model_name_or_path, **(processor_kwargs or {}))
        config = self.model.config
        mode, mixed_layers = layer_scheme(layers, config.num_hidden_layers)
        self.layers = mixed_layers[0] if mode == "layer" else layers
        # The mix is kept in the biLM's configuration (saved with it); `forward` runs no biLSTM layer above it.
        config.mix_mode, config.mix_layers = mode, mixed_layers
        config.mix_initial_weights, config.mix_dropout = None, 0.0  # fixed weights, no dropout
        self.mix = ElmoLayerMix(config)

    def preprocess(self, inputs: Sequence[str], prompt: str | None = None, **kwargs) -> dict[str, torch.Tensor]:
        """Character ids (batch, words, max_characters_per_token) and the word mask (batch, words) of `inputs`."""
        texts = list(inputs)
        for text in texts:
            if not isinstance(text, str):
                raise ValueError(f"ElmoSentenceEncoder encodes text (str), got {type(text).__name__}: {text!r:.80}")
        if prompt:
            texts = self._prepend_prompt(texts, prompt)
        return dict(self.tokenizer(texts, padding=True, return_tensors="pt"))

    def forward(self, features: dict[str, torch.Tensor], **kwargs) -> dict[str, torch.Tensor]:
        """Adds `token_embeddings` (batch, words, D): the mixed layers of each word, zero at padding."""
        inputs = {name: features[name] for name in self.tokenizer.model_input_names if name in features}
        config = self.model.config
        hidden_states = self.model(**inputs, output_hidden_states=True, num_layers=config.mix_depth).hidden_states
        mixed = [hidden_states[index] for index in config.mixed_layers]
        features["token_embeddings"] = self.mix(mixed, features["attention_mask"].bool())
        return features

    def get_embedding_dimension(self) -> int:
        return self.model.config.mix_output_size

    def save(self, output_path: str, *args, safe_serialization: bool = True, **kwargs) -> None:
        """The biLM (config.json, model.safetensors), the tokenizer, `sentence_bert_config.json`, and the code
        files this module runs (this file and what it imports), so the folder loads without this package."""
        self.model.save_pretrained(output_path)
        self.save_tokenizer(output_path)
        self.save_config(output_path)
        for code_file in [__file__, *get_relative_import_files(__file__)]:
            shutil.copyfile(code_file, Path(output_path) / Path(code_file).name)

    @classmethod
    def load(
        cls,
        model_name_or_path: str,
        subfolder: str = "",
        token: bool | str | None = None,
        cache_folder: str | None = None,
        revision: str | None = None,
        local_files_only: bool = False,
        model_kwargs: dict[str, Any] | None = None,
        processor_kwargs: dict[str, Any] | None = None,
        config_kwargs: dict[str, Any] | None = None,
        backend: str = "torch",
        **kwargs,
    ) -> ElmoSentenceEncoder:
        """Load from a folder or Hub repo written by `save` (sentence-transformers calls this)."""
        if backend != "torch":
            raise ValueError(f"ElmoSentenceEncoder runs on the torch backend only, got backend={backend!r}")
        hub = {
            "subfolder": subfolder,
            "token": token,
            "cache_folder": cache_folder,
            "revision": revision,
            "local_files_only": local_files_only,
        }
        config = cls.load_config(model_name_or_path, **hub)
        folder = cls.load_dir_path(model_name_or_path, **hub)
        return cls(
            folder,
            **config,
            model_kwargs={**(model_kwargs or {}), **(config_kwargs or {})},
            processor_kwargs=processor_kwargs,
        )
