"""Command-line options shared by the fine-tuning scripts: the model, how its head mixes the biLM's layers, the
feature cache, and the Trainer's options with --overwrite_output_dir (parsed by `training.argument_parser`)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

from transformers import TrainingArguments

from modeling_elmo.configuration_elmo import MIX_MODES, TASK_ENCODERS, TASK_HEAD_FIELDS, ElmoConfig

from .feature_cache import FEATURE_CACHE_DTYPES

__all__ = ["DataFileArguments", "ElmoModelArguments", "ElmoTrainingArguments"]

# A new ElmoConfig's value of each field: what a converted biLM's config.json holds.
_CONFIG_DEFAULTS = {name: parameter.default for name, parameter in inspect.signature(ElmoConfig).parameters.items()}
# An optional flag: absent keeps the model's value, `--flag` alone means True, `--flag false` False.
_FLAG = {"nargs": "?", "const": True}


def _head_help(text: str, name: str, unset: str | None = None) -> str:
    """The help of a head option: `text`, then where the value comes from when the option is left out (`unset`:
    what ElmoConfig's None means for the field)."""
    default = _CONFIG_DEFAULTS[name]
    return f"{text} Default: the model's own configuration ({unset if default is None else default})."


@dataclass
class ElmoModelArguments:
    """The model to fine-tune and its task head (see `ElmoConfig`). Options left unset keep the value in the
    model's `config.json`; for a converted biLM that is the paper's setting: `scalar_mix` over all layers."""

    model_name_or_path: str = field(metadata={"help": "A converted ELMo model folder (or a fine-tuned head)."})
    mix_mode: str | None = field(
        default=None, metadata={"help": _head_help("How the layers are mixed.", "mix_mode"), "choices": MIX_MODES}
    )
    mix_layers: list[int] | None = field(
        default=None,
        metadata={"help": _head_help("Layers to mix, 0 = token layer (e.g. 0 1).", "mix_layers", unset="all")},
    )
    mix_layer_norm: bool | None = field(
        default=None,
        metadata={"help": _head_help("Normalise each layer before a scalar_mix.", "mix_layer_norm"), **_FLAG},
    )
    mix_l2_coefficient: float | None = field(
        default=None,
        metadata={"help": _head_help("L2 penalty lambda on the scalar_mix weights.", "mix_l2_coefficient")},
    )
    mix_dropout: float | None = field(default=None, metadata={"help": _head_help("Dropout on the mix.", "mix_dropout")})
    mix_initial_weights: list[float] | None = field(
        default=None,
        metadata={
            "help": _head_help(
                "Initial scalar_mix weights, one per mixed layer.", "mix_initial_weights", unset="uniform"
            )
        },
    )
    mix_trainable: bool | None = field(
        default=None, metadata={"help": _head_help("Learn the mix weights and scale.", "mix_trainable"), **_FLAG}
    )
    num_output_representations: int | None = field(
        default=None,
        metadata={
            "help": _head_help(
                "Independent mixes: 2 adds one joined with the task encoder's output.", "num_output_representations"
            )
        },
    )
    freeze_bilm: bool = field(
        default=True,
        metadata={"help": "Keep the biLM's weights fixed (the paper's setting); --no_freeze_bilm trains them."},
    )
    task_encoder: str | None = field(
        default=None, metadata={"help": _head_help("Encoder over the mix.", "task_encoder"), "choices": TASK_ENCODERS}
    )
    task_hidden_size: int | None = field(
        default=None, metadata={"help": _head_help("Task BiLSTM width.", "task_hidden_size")}
    )
    task_num_layers: int | None = field(
        default=None, metadata={"help": _head_help("Task BiLSTM layers.", "task_num_layers")}
    )
    classifier_dropout: float | None = field(
        default=None, metadata={"help": _head_help("Dropout before the classifier.", "classifier_dropout")}
    )
    cache_features: bool = field(
        default=False,
        metadata={
            "help": "Compute the frozen biLM's layers once per dataset and train on the stored layers "
            "(elmo_transformers.training.finetuning.feature_cache); the cache is reused across runs and mixing schemes."
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
            "choices": tuple(FEATURE_CACHE_DTYPES),
        },
    )

    def config_overrides(self) -> dict[str, Any]:
        """The ElmoConfig fields these options set: the task head's fields given (and freeze_bilm, always)."""
        return {name: getattr(self, name) for name in TASK_HEAD_FIELDS if getattr(self, name) is not None}


@dataclass
class DataFileArguments:
    """The data: JSON lines files, one example per line."""

    train_file: str | None = field(default=None, metadata={"help": "Training data (JSON lines); needed by --do_train."})
    validation_file: str | None = field(
        default=None, metadata={"help": "Evaluation data (JSON lines); needed by --do_eval."}
    )


@dataclass
class ElmoTrainingArguments(TrainingArguments):
    """The Trainer's options, and the --overwrite_output_dir that they no longer have (pretrain.py has it too)."""

    overwrite_output_dir: bool = field(
        default=False,
        metadata={"help": "Write into an --output_dir that already holds files; without it such a folder is refused."},
    )
