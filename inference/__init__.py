"""`elmo-embed`: ELMo vectors of a text file, one sentence per line, in AllenNLP's `elmo` command layout.

`elmo_transformers.inference.embed` is the command, `elmo_transformers.inference.embedder` runs the model on batches of
sentences, `elmo_transformers.inference.lines` reads the input (plain or gzip-compressed; binary input is refused),
`elmo_transformers.inference.batching` groups sentences of similar length, `elmo_transformers.inference.pipeline`
overlaps reading, the model and writing (on GPUs), and `elmo_transformers.inference.hdf5_output` writes the resumable
output file. Errors and atomic outputs come from `common`.
"""
