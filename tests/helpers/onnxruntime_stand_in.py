"""A python-backend stand-in for Triton's onnxruntime backend, which no registry has (`triton_server`): copied as a
graph model's `1/model.py`, it runs the `model.onnx` beside it on onnxruntime's CPU provider, one request at a time,
with the inputs and outputs its config names. Runs inside Triton's python backend, never imported by the tests."""

from __future__ import annotations

import json
from pathlib import Path

import onnxruntime
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args: dict) -> None:
        config = json.loads(args["model_config"])
        self.inputs = [tensor["name"] for tensor in config["input"]]
        self.outputs = [tensor["name"] for tensor in config["output"]]
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1  # the tests' machines are small and shared
        graph = str(Path(__file__).with_name("model.onnx"))
        self.session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])

    def execute(self, requests: list) -> list:
        responses = []
        for request in requests:
            feeds = {name: pb_utils.get_input_tensor_by_name(request, name).as_numpy() for name in self.inputs}
            results = self.session.run(self.outputs, feeds)
            tensors = [pb_utils.Tensor(name, result) for name, result in zip(self.outputs, results, strict=True)]
            responses.append(pb_utils.InferenceResponse(output_tensors=tensors))
        return responses
