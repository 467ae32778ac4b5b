"""The export's graphs pass onnx's full check (the model, then shape and type inference in strict mode) and declare
the default domain's opset `graph_builder.OPSET` and no other domain: the bundled biLM's float32 and int8 graphs as
exported, and the float32 graphs of two heads, built in memory (their own operators: the token head's per-word
product, the sequence head's max over the words, the average mix's mean). The int8 graph's products are standard
operators too (`int8_graph.quantize_rows`), not onnxruntime's contrib domain, so any ONNX runtime can check and run it
(onnxruntime's dynamic quantiser, which it replaced, had also left each `Scan` before the product its body reads)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytest.importorskip("onnxruntime")
import onnx

from elmo_transformers.serving.graph_builder import OPSET, build_graph
from modeling_elmo import ElmoForSequenceClassification, ElmoForTokenClassification


def _exported(name: str) -> Callable[[pytest.FixtureRequest], onnx.ModelProto]:
    return lambda request: onnx.load(str(request.getfixturevalue("default_folder") / name))


def _head(kind: type, **config) -> Callable[[pytest.FixtureRequest], onnx.ModelProto]:
    """The graph of a head over the fixture biLM, built in memory (no export, no onnxruntime session)."""

    def graph(request: pytest.FixtureRequest) -> onnx.ModelProto:
        model = kind.from_pretrained(request.getfixturevalue("fixture_model_folder"), num_labels=3, **config)
        return build_graph(model.eval(), {})

    return graph


# Each graph asks only for its own fixture: a head's graph is checked even where the biLM's export fails.
GRAPHS = {
    "biLM float32": _exported("model.onnx"),
    "biLM int8": _exported("model_quantized.onnx"),
    "token head float32": _head(ElmoForTokenClassification),
    "sequence head float32, average mix": _head(ElmoForSequenceClassification, mix_mode="average"),
}


@pytest.mark.parametrize("name", GRAPHS)
def test_the_graph_passes_the_full_check_at_the_opset(request: pytest.FixtureRequest, name: str) -> None:
    graph = GRAPHS[name](request)
    onnx.checker.check_model(graph, full_check=True)
    assert {opset.domain: opset.version for opset in graph.opset_import} == {"": OPSET}
