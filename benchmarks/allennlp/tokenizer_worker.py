"""Times AllenNLP 0.9.0's ``batch_to_ids`` for ``benchmarks/speed/bench_tokenizer.py``; runs in the AllenNLP venv
(``make_venv.sh``).

    python benchmarks/allennlp/tokenizer_worker.py REQUEST.json

REQUEST.json (written by ``bench_tokenizer.py``)::

    {"output_dir": ..., "groups": [{"name": "b32-zipf", "warmup": [[word, ...], ...],
                                    "batches": [[[word, ...], ...], ...]}, ...]}

The worker answers on stdout, one JSON line each: first ``{"ready": ...}`` (torch version, the placeholder modules
of ``stubs``), then one record per group index read from stdin (one line each; EOF ends the worker), so
that the benchmark can interleave AllenNLP and its own runs. A record is ``worker_protocol.time_group``'s (seconds
of each ``batch_to_ids(batch)`` call, one torch thread); the first record of a group also names
``output_dir/allennlp_ids_{name}.npz``, the ids of every batch as int64 arrays ``batch{i}`` of shape
(batch, words, 50), for the benchmark to check that both sides give the same ids. Everything else the worker
prints goes to stderr.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import stubs
import torch
from worker_protocol import protocol_writer, time_group


def main() -> None:
    answer = protocol_writer()
    request = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    torch.set_num_threads(1)
    _, batch_to_ids, _ = stubs.import_elmo()
    answer({"ready": True, "torch": torch.__version__, "stubbed_modules": stubs.STUBBED_MODULES})
    written: set[int] = set()
    for line in sys.stdin:
        index = int(line)
        group = request["groups"][index]
        record, ids = time_group(batch_to_ids, group["batches"], group["warmup"], budget_s=float("inf"))
        if index not in written:
            path = Path(request["output_dir"]) / f"allennlp_ids_{group['name']}.npz"
            np.savez(path, **{f"batch{i}": batch.numpy() for i, batch in enumerate(ids)})
            record["ids"] = str(path)
            written.add(index)
        answer(record)


if __name__ == "__main__":
    main()
