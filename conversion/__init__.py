"""Conversions between the original ELMo formats and transformers folders (`elmo-convert`).

`command` lists the subcommands (`command.COMMANDS`: names, options, and the converter function each runs), and
`convert_options` declares each one's options as a frozen dataclass, from which its parser is built and which its
converter takes; both are light to import so that `cli` parses arguments without torch. Each converter module
(`allennlp`, `elmoformanylangs`, `bilm_tf_checkpoint`, `token_embeddings`, `sentence_embeddings`) is imported when
its subcommand runs; `elmo-convert onnx` runs the serving package's export (`elmo_transformers.serving.onnx_export`).
`allennlp --archive` runs `nlpl_archive`, which hands the model an NLPL archive holds to the converter of its format:
it sits above those three, which never import it. The three that write a model folder finish with
`saving.save_converted_folder` (atomic write, reload, float64 parity, model page).
"""

from elmo_transformers.common.errors import ConversionError

__all__ = ["ConversionError"]
