"""`elmo-embed` as `accelerate launch` (or elmo-embed --workers) starts it, with what the tests of several processes
need, read from the environment:
- ELMO_TEST_SEGMENT_BYTES: the segment size (1: a segment per batch, stored as soon as the batch is written);
- ELMO_TEST_RECORD: a folder where each process appends the lines it writes to `PROCESS.txt`;
- ELMO_TEST_FAIL_PROCESS and ELMO_TEST_FAIL_HOW: that process (or "every" process) fails in its first batch, "raise"
  (a RuntimeError where the model runs: `TorchEmbedder.run`), "refuse" (an EmbedError there, as a refused line raises),
  "kill" (SIGKILL once the batch is stored: after `SegmentStore.end_batch`, as a machine that dies would leave it;
  another signal's number in ELMO_TEST_KILL_SIGNAL) or "stall" (a minute's sleep there before that SIGKILL, for a
  signal to find the run under way).
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from pathlib import Path

import elmo_transformers.inference.run as run
import elmo_transformers.inference.segment_store as segment_store
from elmo_transformers.common.errors import EmbedError
from elmo_transformers.inference.embed import main
from elmo_transformers.inference.limits import EmbedLimits
from elmo_transformers.inference.torch_runner import TorchEmbedder

PROCESS = int(os.environ.get("RANK", "0"))

if "ELMO_TEST_SEGMENT_BYTES" in os.environ:
    limits = EmbedLimits(segment_bytes=int(os.environ["ELMO_TEST_SEGMENT_BYTES"]))
    run.embed_file = functools.partial(run.embed_file, limits=limits)  # (main() calls it through its module)

if "ELMO_TEST_RECORD" in os.environ:
    record = Path(os.environ["ELMO_TEST_RECORD"]) / f"{PROCESS}.txt"
    write = segment_store.SegmentStore.write

    def recorded_write(self, line, *args, **kwargs):
        write(self, line, *args, **kwargs)
        with record.open("a") as file:
            file.write(f"{line}\n")

    segment_store.SegmentStore.write = recorded_write

if os.environ.get("ELMO_TEST_FAIL_PROCESS") in (str(PROCESS), "every"):
    if os.environ["ELMO_TEST_FAIL_HOW"] in ("raise", "refuse"):
        failure = RuntimeError if os.environ["ELMO_TEST_FAIL_HOW"] == "raise" else EmbedError

        def failing_run(self, prepared):
            raise failure("injected failure in the model")

        TorchEmbedder.run = failing_run
    else:
        end_batch = segment_store.SegmentStore.end_batch

        def killed_end_batch(self):
            end_batch(self)
            if os.environ["ELMO_TEST_FAIL_HOW"] == "stall":
                time.sleep(60)
            os.kill(os.getpid(), int(os.environ.get("ELMO_TEST_KILL_SIGNAL", signal.SIGKILL)))

        segment_store.SegmentStore.end_batch = killed_end_batch

sys.argv[0] = "elmo-embed"
sys.exit(main(sys.argv[1:]))
