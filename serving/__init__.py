"""ELMo served as ONNX graphs: `elmo-convert onnx` and what reads its folders, on onnxruntime (the `[onnx]` extra).

The public embedder: `GraphEmbedder` (`graph_embedder`) embeds raw text or words with a folder's graph, on
onnxruntime alone (no torch, no transformers); `elmo-embed` runs it on an ONNX folder (`inference.onnx_runner`).

The folder and its graph: `graph_layout` is the layout every writer and reader holds to (file names, metadata, the
graph's inputs and outputs, `open_graph`), `graph_builder` writes the graph node by node from a PyTorch model,
`int8_graph` rewrites its large products with 8-bit weights and activations.

The export: `onnx_export` is `elmo-convert onnx` (the graphs and the copied files), `export_measurements` what it
measures of the graphs and the bars they must pass, `onnx_model_page` the folder's model page (its template
`onnx_model_page.md`). Triton: `triton_repository` writes the model repository, `triton_text_model` is the front
end's model.py there (copied, never imported).
"""

from .graph_embedder import GraphEmbedder, GraphError

__all__ = ["GraphEmbedder", "GraphError"]
