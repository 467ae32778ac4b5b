"""Load an ELMo model folder into PyTorch and turn batches of sentences into float32 NumPy vectors of the chosen
layers (`TorchEmbedder`, the `BatchEmbedder` of a model folder)."""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch
from safetensors import SafetensorError
from transformers import PreTrainedConfig
from transformers.utils import SAFE_WEIGHTS_NAME
from transformers.utils import logging as transformers_logging

import modeling_elmo
from elmo_transformers.common.errors import EmbedError, first_line
from elmo_transformers.common.model_folder import damaged_weights_problem, model_type_problem, require_model_folder
from elmo_transformers.common.safe_load import holds_code
from modeling_elmo import ElmoConfig, ElmoLayerMix, ElmoModel, ElmoTokenizer, TokenVectorCache

from .options import COMPUTE_DTYPES
from .request import PYTORCH, mix_problem
from .runner import BatchEmbedder, PendingVectors, PreparedBatch

__all__ = ["TORCH_DTYPES", "TorchEmbedder", "default_device"]

# The compute dtypes (--dtype) as torch's.
TORCH_DTYPES = {name: getattr(torch, name) for name in COMPUTE_DTYPES}


def default_device() -> str:
    """The default device: "cuda" where a GPU is available, else "cpu"."""
    return "cuda" if torch.cuda.is_available() else "cpu"


class TorchEmbedder(BatchEmbedder):
    """An ELMo model and its tokenizer on one device, giving the vectors of `layers` for batches of sentences.

    `layers` is "all" (every layer: L+1 vectors per word), "top" (the top biLSTM layer), "average" (the mean
    of the L+1 layers) or "mix" (the first learned mix of a task head fine-tuned with this package, `mixes.0`,
    without dropout). The model computes in `compute_dtype`; the vectors come out float32. Each word's vectors are
    `width` = 2 * projection_dim wide (a `concat` mix is wider). `elmo-embed` checked the three before,
    and that the model has a mix (`elmo_transformers.inference.request.check_request`).
    """

    backend = PYTORCH.name

    def __init__(self, model: str, *, layers: str, compute_dtype: str = "float32", device: str | None = None) -> None:
        self.layers = layers
        self.compute_dtype = compute_dtype
        self.model = _load_model(model, TORCH_DTYPES[compute_dtype])
        self.mix = _load_mix(model, TORCH_DTYPES[compute_dtype]) if layers == "mix" else None
        self.tokenizer = ElmoTokenizer.from_pretrained(model)
        self.device = torch.device(device or default_device())
        self.model.to(self.device)
        if self.mix is not None:
            self.mix.to(self.device)
        self.token_cache = _token_cache(self.device)
        self.width = self.model.config.mix_output_size if self.mix is not None else 2 * self.model.config.projection_dim
        self.num_layers = self.model.config.num_hidden_layers + 1
        local_weights = Path(model) / SAFE_WEIGHTS_NAME
        self.weights_file = local_weights if local_weights.is_file() else None  # (None: a Hub model)

    @property
    def device_type(self) -> str:
        return self.device.type

    def split_words(self, text: str) -> list[str]:
        return self.tokenizer.tokenize(text)

    def prepare(self, sentences: Sequence[Sequence[str]]) -> PreparedBatch:
        """The first step of `embed`, on the host: the tokenizer's padded batch (in pinned memory on a GPU, so that
        `run` copies it without waiting). Any thread may prepare batches while another runs the model."""
        inputs = self.tokenizer(
            [list(words) for words in sentences], is_split_into_words=True, padding=True, return_tensors="pt"
        )
        tensors = dict(inputs)
        if self.device.type == "cuda":
            tensors = {name: tensor.pin_memory() for name, tensor in tensors.items()}
        return PreparedBatch(tensors, [len(words) for words in sentences])

    def run(self, prepared: PreparedBatch) -> PendingVectors:
        """The second step of `embed`: the model on the device. On a GPU this returns as soon as the work is queued,
        the copy of the vectors back to the host included; `.result()` waits for them."""
        non_blocking = self.device.type == "cuda"
        inputs = {name: tensor.to(self.device, non_blocking=non_blocking) for name, tensor in prepared.tensors.items()}
        with torch.inference_mode():
            # A head's mix may read fewer layers: --layers mix runs none above them (config.mix_depth).
            depth = {"num_layers": self.model.config.mix_depth} if self.mix is not None else {}
            output = self.model(
                **inputs, output_hidden_states=self.layers != "top", token_cache=self.token_cache, **depth
            )
            if self.layers == "top":
                vectors = output.last_hidden_state.float()  # (batch, words, width)
            elif self.mix is not None:
                mixed = [output.hidden_states[index] for index in self.model.config.mixed_layers]
                vectors = self.mix(mixed, inputs["attention_mask"].bool()).float()  # (batch, words, width)
            else:
                vectors = torch.stack(output.hidden_states, dim=1).float()  # (batch, L+1, words, width)
                if self.layers == "average":
                    vectors = vectors.mean(dim=1)  # (batch, words, width)
            if not non_blocking:
                return PendingVectors(vectors.cpu().numpy(), prepared.lengths)
            host = torch.empty(vectors.shape, dtype=vectors.dtype, pin_memory=True)
            host.copy_(vectors, non_blocking=True)
            copied = torch.cuda.Event()
            copied.record()
        return PendingVectors(host.numpy(), prepared.lengths, copied)  # (a view: read once `copied` has passed)


def _token_cache(device: torch.device) -> TokenVectorCache | None:
    """The run's cache of token vectors, so that the character CNN encodes each distinct word once: on a CPU, where
    a word's vector is the same in any batch (`TokenVectorCache`); a GPU's, unchecked there, computes them all."""
    return TokenVectorCache() if device.type == "cpu" else None


def _load_model(model: str, dtype: torch.dtype) -> ElmoModel:
    """The model of a folder (or Hub repository) written by elmo-convert; a one-line error for anything else."""
    require_model_folder(model, EmbedError, hub=True)
    try:
        config, _ = PreTrainedConfig.get_config_dict(model)
        problem = model_type_problem(model, config.get("model_type"))  # a Hub model's, seen only now
        if problem:
            raise EmbedError(problem)
        with _quiet_transformers():  # its report of mismatched shapes is a table: the line below names them
            loaded, info = ElmoModel.from_pretrained(
                model, dtype=dtype, output_loading_info=True, ignore_mismatched_sizes=True
            )
    except OSError as error:
        problem = "cannot load the model" if Path(model).exists() else "no such model folder, nor a Hub model"
        raise EmbedError(f"{model}: {problem}: {first_line(error)}") from None
    except SafetensorError as error:  # a Hub model's download (a local folder's weights are checked above)
        raise EmbedError(damaged_weights_problem(model, error)) from None
    except pickle.UnpicklingError:  # transformers reads pytorch_model.bin with weights_only=True
        raise EmbedError(holds_code(f"{model} (its pytorch_model.bin)")) from None
    if info["missing_keys"]:
        raise EmbedError(f"{model}: the weights lack {', '.join(sorted(info['missing_keys']))}")
    if info["mismatched_keys"]:
        name, stored, expected = sorted(info["mismatched_keys"])[0]
        raise EmbedError(
            f"{model}: the weight {name} has the shape {list(stored)}, but its config.json makes it {list(expected)}:"
            " the weights and config.json do not belong together; copy or convert the model again"
        )
    return loaded.eval()


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """transformers' warnings left out (its loading report: `_load_model` says what matters in one line)."""
    verbosity = transformers_logging.get_verbosity()
    transformers_logging.set_verbosity_error()
    try:
        yield
    finally:
        transformers_logging.set_verbosity(verbosity)


def _load_mix(model: str, dtype: torch.dtype) -> ElmoLayerMix:
    """The first mix (`mixes.0`) of a task head fine-tuned with this package. `check_request` refused a model without
    one, but for a Hub model that the load has just downloaded, which it looks at now."""
    problem = None if Path(model).is_dir() else mix_problem(model)
    if problem:
        raise EmbedError(problem)
    config = ElmoConfig.from_pretrained(model)
    head_class = getattr(modeling_elmo, (config.architectures or ["ElmoForTokenClassification"])[0])
    return head_class.from_pretrained(model, dtype=dtype).mixes[0].eval()
