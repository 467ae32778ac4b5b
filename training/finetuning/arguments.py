"""Command-line options shared by the training scripts: the model, how its head mixes the biLM's layers, and the
feature cache."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from modeling_elmo.configuration_elmo import MIX_MODES, TASK_ENCODERS

from .feature_cache import STORAGE_DTYPES

__all__ = ["DataFileArguments", "ElmoModelArguments"]

# The ElmoConfig fields the options below set; None leaves the model's own value.
HEAD_OPTIONS = (
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
_KEEP = "Default: the model's own configuration"
# An optional flag: absent keeps the model's value, `--flag` alone means True, `--flag false` False.
_FLAG = {"nargs": "?", "const": True}


@dataclass
class ElmoModelArguments:
    """The model to fine-tune and its task head (see `ElmoConfig`). Options left unset keep the value in the
    model's `config.json`; for a converted biLM that is the paper's setting: `scalar_mix` over all layers."""

    model_name_or_path: str = field(metadata={"help": "A converted ELMo model folder (or a fine-tuned head)."})
    mix_mode: str | None = field(
        default=None, metadata={"help": f"How the layers are mixed. {_KEEP} (scalar_mix).", "choices": MIX_MODES}
    )
    mix_layers: list[int] | None = field(
        default=None, metadata={"help": f"Layers to mix, 0 = token layer (e.g. 0 1). {_KEEP} (all)."}
    )
    mix_layer_norm: bool | None = field(
        default=None,
        metadata={"help": f"Normalise each layer before a scalar_mix. {_KEEP} (False).", **_FLAG},
    )
    mix_l2_coefficient: float | None = field(
        default=None, metadata={"help": f"L2 penalty lambda on the scalar_mix weights. {_KEEP} (0)."}
    )
    mix_dropout: float | None = field(default=None, metadata={"help": f"Dropout on the mix. {_KEEP} (0.5)."})
    mix_initial_weights: list[float] | None = field(
        default=None, metadata={"help": f"Initial scalar_mix weights, one per mixed layer. {_KEEP} (uniform)."}
    )
    mix_trainable: bool | None = field(
        default=None, metadata={"help": f"Learn the mix weights and scale. {_KEEP} (True).", **_FLAG}
    )
    num_output_representations: int | None = field(
        default=None,
        metadata={"help": f"Independent mixes: 2 adds one joined with the task encoder's output. {_KEEP} (1)."},
    )
    freeze_bilm: bool = field(
        default=True,
        metadata={"help": "Keep the biLM's weights fixed (the paper's setting); --no_freeze_bilm trains them."},
    )
    task_encoder: str | None = field(
        default=None, metadata={"help": f"Encoder over the mix. {_KEEP} (bilstm).", "choices": TASK_ENCODERS}
    )
    task_hidden_size: int | None = field(default=None, metadata={"help": f"Task BiLSTM width. {_KEEP} (200)."})
    task_num_layers: int | None = field(default=None, metadata={"help": f"Task BiLSTM layers. {_KEEP} (1)."})
    classifier_dropout: float | None = field(
        default=None, metadata={"help": f"Dropout before the classifier. {_KEEP} (0.1)."}
    )
    cache_features: bool = field(
        default=False,
        metadata={
            "help": "Compute the frozen biLM's layers once per dataset and train on the stored layers "
            "(training.finetuning.feature_cache); the cache is reused across runs and mixing schemes."
        },
    )
    features_cache_dir: str | None = field(
        default=None,
        metadata={"help": "Folder of the feature cache. Default: elmo_bilm_features in the datasets cache."},
    )
    features_dtype: str = field(
        default="float32",
        metadata={
            "help": "Storage dtype of the cached layers (float16: half the disk).",
            "choices": tuple(STORAGE_DTYPES),
        },
    )

    def config_overrides(self) -> dict[str, Any]:
        """The ElmoConfig fields these options set (those given, and freeze_bilm)."""
        return {name: getattr(self, name) for name in HEAD_OPTIONS if getattr(self, name) is not None}


@dataclass
class DataFileArguments:
    """The data: JSON lines files, one example per line."""

    train_file: str | None = field(default=None, metadata={"help": "Training data (JSON lines); needed by --do_train."})
    validation_file: str | None = field(
        default=None, metadata={"help": "Evaluation data (JSON lines); needed by --do_eval."}
    )
