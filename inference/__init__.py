"""`elmo-embed`: ELMo vectors of a text file, one sentence per line, in AllenNLP's `elmo` command layout.

The command line: `embed` is the command (`elmo-embed`), `options` its options (`EmbedOptions`, each with its check).

The run and its plan: `run` is one run (`embed_file`): its checks (`request`: the model folder, resolved once, and
what its backend serves of --device, --layers and --dtype), then `plan` (the model and its runner, the
settings, the input's size from `input_size` and the space check), `embedding_pass` (the lines read in windows by
`lines`, which refuses binary input, grouped into batches of similar length by `batching`, embedded and written, with
`stages` overlapping reading, the model and writing on GPUs, and `overflow` refusing vectors the model overflowed),
`sharding` (the share of each process under `accelerate launch`) and `summary` (what the run did); `limits` the
sizes it works in (`EmbedLimits`: its windows of the input, its segments, chunks and shards).

The model runners: `runner` is what a run uses of a model (`BatchEmbedder`), `torch_runner` runs a model folder on
PyTorch, `onnx_runner` a graph of `elmo-convert onnx` on onnxruntime (without torch), through the serving package's
`GraphEmbedder`.

The outputs: `settings` is what the vectors depend on (`settings.json`, the file's attributes), `storage` their dtype
and filter, `segment_store` the resumable store of the stored lines (`OUT.partial/`), which both formats are made
of: `hdf5_output` the hdf5 file, `datasets_output` the `--format datasets` folder; `output_attributes` the names of
the output's attributes.
Errors and atomic outputs come from `common`.
"""
