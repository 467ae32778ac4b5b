"""The options of `pretrain`, declared as HfArgumentParser dataclasses (as fine-tuning's `arguments` are), one per
group of its `--help`: the data, the model to start from, the training run.

A run holds them as one `PretrainArguments`, whose fields, in the order of `--help`, are what the run records
(`training_args.json` beside the model, `args` in each checkpoint's `trainer_state.json`; `model_card` reads them
back). A bool option is a switch (`SWITCH`: `--no_space_check`, no value), as it was before HfArgumentParser.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

from elmo_transformers.training.argument_parser import SWITCH

__all__ = [
    "DEFAULT_LEARNING_RATES",
    "NO_SPACE_CHECK_FLAG",
    "LmDataArguments",
    "LmModelArguments",
    "LmTrainingArguments",
    "PretrainArguments",
]

# The learning rate of each --optimizer when --learning_rate is not given: 0.2 is bilm-tf's (Adagrad).
DEFAULT_LEARNING_RATES = {"adagrad": 0.2, "adamw": 1e-3}
# The free-space check's off switch (the field `no_space_check`), which the refusal names; in the underscore style of
# this script's options (elmo-* tools: NO_SPACE_CHECK).
NO_SPACE_CHECK_FLAG = "--no_space_check"


@dataclass(frozen=True, kw_only=True)
class LmDataArguments:
    _argument_group_name: ClassVar[str] = "data"

    train_files: list[str] = field(metadata={"help": "Glob(s) of text shards: one sentence per line."})
    validation_files: list[str] | None = field(
        default=None, metadata={"help": "Glob(s) of held-out text for perplexity."}
    )
    vocab_file: str = field(metadata={"help": "bilm-tf vocabulary (build_vocab.py writes one)."})


@dataclass(frozen=True, kw_only=True)
class LmModelArguments:
    """The model to start from: exactly one of --options_file and --model_name_or_path (`load_starting_model`
    checks it, after the vocabulary and the corpus)."""

    _argument_group_name: ClassVar[str] = "model (one of)"

    options_file: str | None = field(
        default=None, metadata={"help": "bilm-tf options.json: train a new biLM of that shape."}
    )
    model_name_or_path: str | None = field(
        default=None, metadata={"help": "A saved biLM or language-model folder to continue from."}
    )
    num_sampled: int | None = field(
        default=None,
        metadata={
            "help": "Sampled-softmax candidates per step (bilm-tf: 8192); 0: full softmax. "
            "Default: the model's options."
        },
    )
    dropout: float | None = field(
        default=None, metadata={"help": "Dropout of the LSTM inputs and outputs. Default: the model's."}
    )


@dataclass(frozen=True, kw_only=True)
class LmTrainingArguments:
    _argument_group_name: ClassVar[str] = "training"

    output_dir: str
    overwrite_output_dir: bool = field(default=False, metadata={"help": "Train into an existing output_dir.", **SWITCH})
    max_steps: int | None = field(default=None, metadata={"help": "Optimizer steps; overrides --num_train_epochs."})
    num_train_epochs: float = 1.0
    per_device_train_batch_size: int = field(default=128, metadata={"help": "Streams per process."})
    per_device_eval_batch_size: int = 32
    unroll_steps: int = field(default=20, metadata={"help": "Words per window (truncated BPTT)."})
    optimizer: str = field(default="adagrad", metadata={"choices": tuple(DEFAULT_LEARNING_RATES)})
    learning_rate: float | None = field(
        default=None,
        metadata={
            "help": "Default: " + ", ".join(f"{rate} for {name}" for name, rate in DEFAULT_LEARNING_RATES.items()) + "."
        },
    )
    max_grad_norm: float = field(default=10.0, metadata={"help": "Global-norm clipping (bilm-tf: 10)."})
    save_steps: int = field(default=1000, metadata={"help": "Write checkpoint-N every this many steps."})
    eval_steps: int | None = field(
        default=None, metadata={"help": "Validation perplexity every this many steps (default: at saves)."}
    )
    logging_steps: int = 50
    seed: int = 42
    sparse_softmax_sync: bool = field(
        default=False,
        metadata={
            "help": "Average the softmax gradient across processes over the rows the step touched only, instead of "
            "DDP's all-reduce of the whole V x P matrix (the same result; 17x less traffic with 4 processes at "
            "bilm-tf's sizes).",
            **SWITCH,
        },
    )
    ddp_comm_hook: str = field(
        default="no",
        metadata={
            "help": "Send gradients between processes in 16 bits: half the traffic of the per-step all-reduce "
            "(the softmax gradient is 1.6 GB at the original size); bf16 needs GPUs. Default: float32.",
            "choices": ("no", "bf16", "fp16"),
        },
    )
    resume_from_checkpoint: str | None = field(
        default=None, metadata={"help": "A checkpoint-N folder, or 'latest' in output_dir."}
    )
    no_space_check: bool = field(
        default=False,
        metadata={
            "help": "Start even when the disk of output_dir has less free space than the checkpoints and the model "
            "need (estimated from the parameters and the optimizer's state).",
            **SWITCH,
        },
    )


@dataclass(frozen=True, kw_only=True)
class PretrainArguments(LmTrainingArguments, LmModelArguments, LmDataArguments):
    """All the options of a run, the three groups in one record: its fields come in the order of `--help` (the data,
    the model, the training), and `record` is what the run writes down."""

    @classmethod
    def from_groups(cls, *groups: LmDataArguments | LmModelArguments | LmTrainingArguments) -> PretrainArguments:
        return cls(**{name: value for group in groups for name, value in asdict(group).items()})

    def record(self) -> dict[str, Any]:
        """The options by name, in the order of `--help`: what the run records."""
        return asdict(self)
