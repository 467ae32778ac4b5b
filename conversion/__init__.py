"""Conversions between the original ELMo formats and transformers folders (`elmo-convert`).

Each converter module (`allennlp`, `elmoformanylangs`, `bilm_tf_checkpoint`, `token_embeddings`,
`sentence_embeddings`) defines its subcommand (`command.ConverterCommand`), which `cli` lists; the three that
write a model folder finish with `saving.save_converted_folder` (atomic write, reload, float64 parity, model page).
"""

from common.errors import ConversionError
from common.moved_modules import keep_old_paths

__all__ = ["ConversionError"]

# The shared plumbing that lived here before it got its own package, `common`.
keep_old_paths(
    {
        "conversion.errors": "common.errors",
        "conversion.atomic_output": "common.atomic_output",
        "conversion.options": "common.options",
    }
)
