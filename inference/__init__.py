"""`elmo-embed`: ELMo vectors of a text file, one sentence per line, in AllenNLP's `elmo` command layout.

`inference.embed` is the command, `inference.embedder` runs the model on batches of sentences,
`inference.lines` reads the input (plain or gzip-compressed; binary input is refused), `inference.batching`
groups sentences of similar length, `inference.pipeline` overlaps reading, the model and writing (on GPUs), and
`inference.hdf5_output` writes the resumable output file. Errors and atomic outputs come from `common`.
"""

from common.moved_modules import keep_old_paths

# Its error type joined the others in `common`.
keep_old_paths({"inference.errors": "common.errors"})
