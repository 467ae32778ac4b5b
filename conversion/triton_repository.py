"""`elmo-convert onnx --triton-repository REPO`: the exported graphs as models of a Triton Inference Server model
repository, served by Triton's onnxruntime backend with dynamic batching.

Each graph becomes a model folder, `REPO/<name>/config.pbtxt` and `REPO/<name>/1/model.onnx` (version 1; the
backend's default file name), the int8 graph a second model `<name>_int8`. The config declares the inputs and outputs
of `graph_signature`, the graph's one statement of them, in Triton's convention for `max_batch_size > 0`: the batch
dimension left out (every input and output is batch-first), -1 for each size a call chooses (the words).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from elmo_transformers.common.atomic_output import atomic_output_folder
from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.onnx_layout import FLOAT_GRAPH, GraphSignature, GraphTensor, graph_weights

__all__ = [
    "INT8_SUFFIX",
    "MAX_BATCH_SIZE",
    "MAX_QUEUE_DELAY_MICROSECONDS",
    "model_config",
    "triton_dims",
    "triton_model_folders",
    "triton_model_names",
    "write_triton_model",
]

# The sample config's batching (docs/onnx.md, "Serving with Triton", says why): batches of up to 32 sentences, which
# get most of the throughput that batching gives at the original shape while a batch of 128 makes every sentence wait
# for the longest of four times as many; no preferred sizes (none is markedly faster), so the batcher forms the
# largest batch the queue holds; a queue delay of 5 ms, under 2% of one 20-word sentence's time alone at the
# original shape, so that requests arriving together share a batch.
MAX_BATCH_SIZE = 32
MAX_QUEUE_DELAY_MICROSECONDS = 5000
INT8_SUFFIX = "_int8"  # the int8 graph's model: `<name>_int8`
_DATA_TYPES = {"int64": "TYPE_INT64", "float": "TYPE_FP32", "bool": "TYPE_BOOL"}  # ONNX's spelling -> Triton's


def triton_model_names(name: str, *, quantize: bool) -> list[str]:
    """The repository's models of an export named `name`: the float32 graph's, then the int8 graph's."""
    return [name, *([name + INT8_SUFFIX] if quantize else [])]


def triton_dims(tensor: GraphTensor) -> list[int]:
    """Triton's `dims` of a batch-first graph tensor: its shape without the batch, -1 for each size a call
    chooses."""
    if tensor.shape[:1] != ("batch",):
        raise ValueError(f"{tensor.name} is not batch-first ({tensor}): Triton cannot batch it")
    return [size if isinstance(size, int) else -1 for size in tensor.shape[1:]]


def _tensor_list(kind: str, tensors: tuple[GraphTensor, ...]) -> str:
    """The `input [...]` or `output [...]` list of a model's config.pbtxt."""
    entries = ",\n".join(
        f'  {{\n    name: "{tensor.name}"\n    data_type: {_DATA_TYPES[tensor.element]}\n'
        f"    dims: [ {', '.join(map(str, triton_dims(tensor)))} ]\n  }}"
        for tensor in tensors
    )
    return f"{kind} [\n{entries}\n]\n"


def model_config(name: str, signature: GraphSignature) -> str:
    """The `config.pbtxt` (Triton's `ModelConfig` in protobuf text format) of the model `name` serving a graph of
    `signature`."""
    return (
        f"# Triton model {name}, written by elmo-convert onnx. Requests batch together only when their inputs\n"
        "# have the same shape: pad each request's sentences to a common number of words\n"
        "# (elmo-transformers, docs/onnx.md: Serving with Triton).\n"
        f"name: {json.dumps(name, ensure_ascii=False)}\n"
        'backend: "onnxruntime"\n'
        'platform: "onnxruntime_onnx"\n'
        f"max_batch_size: {MAX_BATCH_SIZE}\n"
        + _tensor_list("input", signature.inputs)
        + _tensor_list("output", signature.outputs)
        + f"dynamic_batching {{\n  max_queue_delay_microseconds: {MAX_QUEUE_DELAY_MICROSECONDS}\n}}\n"
    )


def _refuse_the_output_itself(repository: Path, names: list[str], output: Path) -> None:
    """A model folder that is the export's output, or holds it, or lies in it, would be written twice."""
    resolved = output.resolve()
    for name in names:
        model = (repository / name).resolve()
        if model == resolved or model in resolved.parents or resolved in model.parents:
            raise ConversionError(
                f"--triton-repository {repository}: its model {name} would be {output} or overlap it; name another"
                " repository or --output"
            )


@contextmanager
def triton_model_folders(
    repository: str | Path | None, output: Path, *, quantize: bool, overwrite: bool, inputs: tuple[Path, ...]
) -> Iterator[dict[str, Path]]:
    """The staging folder of each model of the export to `output` in `repository` (by name; none without a
    repository), each published atomically as `REPO/<name>` when the block completes (`atomic_output_folder`: an
    existing model is refused unless `overwrite`, and kept as it was on any failure)."""
    if repository is None:
        yield {}
        return
    repository, names = Path(repository), triton_model_names(output.name, quantize=quantize)
    _refuse_the_output_itself(repository, names, output)
    with ExitStack() as stack:
        yield {
            name: stack.enter_context(atomic_output_folder(repository / name, overwrite=overwrite, inputs=inputs))
            for name in names
        }


def write_triton_model(folder: Path, name: str, graph: Path, signature: GraphSignature) -> None:
    """Fill the model folder `folder` of the model `name`: `config.pbtxt` and version 1, a copy of `graph` and of its
    weights' file, under the name the graph refers to it by (`graph_weights`)."""
    (folder / "1").mkdir()
    shutil.copyfile(graph, folder / "1" / FLOAT_GRAPH)
    weights = graph_weights(graph)
    if weights.is_file():
        shutil.copyfile(weights, folder / "1" / weights.name)
    (folder / "config.pbtxt").write_text(model_config(name, signature), encoding="utf-8")
