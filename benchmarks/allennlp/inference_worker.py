"""Times AllenNLP 0.9.0's ``_ElmoBiLm`` for ``benchmarks/speed/bench_inference.py``; runs in the AllenNLP venv
(``make_venv.sh``).

    python benchmarks/allennlp/inference_worker.py REQUEST.json

REQUEST.json (written by ``bench_inference.py``)::

    {"options_file": ..., "weight_file": ..., "threads": 2, "budget_s": 120.0, "output_dir": ...,
     "groups": [{"batch_size": 32, "warmup": [[word, ...], ...], "batches": [[[word, ...], ...], ...]}, ...]}

The worker loads the model once and answers on stdout, one JSON line each: first ``{"ready": ...}`` (torch
version, load time, the placeholder modules of ``stubs``), then one record per group index read from
stdin (one line each; EOF ends the worker), so that the benchmark can interleave AllenNLP and its own runs batch
size by batch size. Everything else the worker prints goes to stderr.

For a group: the sentences become character ids with AllenNLP's own ``batch_to_ids`` (untimed), one warm-up call,
then each batch is timed (``_ElmoBiLm.forward`` only) after ``_elmo_lstm.reset_states()``, so that every batch
starts from a zero LSTM state like the stateless ``ElmoModel``. The activations of every layer, with the
``<S>``/``</S>`` positions removed by AllenNLP's ``remove_sentence_boundaries``, go to
``output_dir/allennlp_b{batch_size}.npz`` as float32 arrays ``batch{i}`` of shape (layers, batch, words,
2 * projection_dim); the record (see ``worker_protocol.time_group``) names that file.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import stubs
import torch
from worker_protocol import protocol_writer, time_group


def main() -> None:
    answer = protocol_writer()
    request = json.loads(Path(sys.argv[1]).read_text())
    torch.set_num_threads(request["threads"])
    elmo_bilm_class, batch_to_ids, remove_sentence_boundaries = stubs.import_elmo()

    start = time.perf_counter()
    bilm = elmo_bilm_class(request["options_file"], request["weight_file"], requires_grad=False).eval()
    answer(
        {
            "ready": True,
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "load_s": time.perf_counter() - start,
            "stubbed_modules": stubs.STUBBED_MODULES,
        }
    )

    def run(char_ids: torch.Tensor) -> dict:
        bilm._elmo_lstm.reset_states()
        return bilm(char_ids)

    for line in sys.stdin:
        group = request["groups"][int(line)]
        batch_size = group["batch_size"]
        char_ids = [batch_to_ids(batch) for batch in group["batches"]]
        with torch.no_grad():
            record, outputs = time_group(run, char_ids, batch_to_ids(group["warmup"]), budget_s=request["budget_s"])
            arrays = {}
            for index, output in enumerate(outputs):
                layers = [remove_sentence_boundaries(layer, output["mask"])[0] for layer in output["activations"]]
                arrays[f"batch{index}"] = torch.stack(layers).float().numpy()
        del outputs
        path = Path(request["output_dir"]) / f"allennlp_b{batch_size}.npz"
        np.savez(path, **arrays)
        answer({"batch_size": batch_size, "outputs": str(path), **record})


if __name__ == "__main__":
    main()
