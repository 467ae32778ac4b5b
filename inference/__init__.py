"""`elmo-embed`: ELMo vectors of a text file, one sentence per line, in AllenNLP's `elmo` command layout.

`inference.embed` is the command, `inference.embedder` runs the model on batches of sentences,
`inference.lines` reads the input (plain or gzip-compressed; binary input is refused), `inference.batching`
groups sentences of similar length, and `inference.hdf5_output` writes the resumable output file.
"""
