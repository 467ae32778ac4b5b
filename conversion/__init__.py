"""Conversions between the original ELMo formats and transformers folders (`elmo-convert`).

Each converter module (`allennlp`, `elmoformanylangs`, `bilm_tf_checkpoint`, `token_embeddings`,
`sentence_embeddings`) defines its subcommand (`command.ConverterCommand`), which `cli` lists; the three that
write a model folder finish with `saving.save_converted_folder` (atomic write, reload, float64 parity, model page).
"""

from common.errors import ConversionError

__all__ = ["ConversionError"]
