"""ELMo served as ONNX graphs: `elmo-convert onnx` and what reads its folders, on onnxruntime (the `[onnx]` extra).

The folder and its graph: `graph_layout` is the layout every writer and reader holds to (file names, metadata, the
graph's inputs and outputs, `open_graph`), `graph_builder` writes the graph node by node from a PyTorch model,
`int8_graph` rewrites its large products with 8-bit weights and activations.

The export: `onnx_export` is `elmo-convert onnx` (the graphs, the copied files, the measurements, the model page and
the Triton models). Triton: `triton_repository` writes the model repository, `triton_text_model` is the front end's
model.py there (copied, never imported).
"""
