"""Conversions between the original ELMo formats and transformers folders (`elmo-convert`).

`command` lists the subcommands (`command.COMMANDS`: names, arguments, and the converter function each runs),
light to import so that `cli` parses arguments without torch; each converter module (`allennlp`,
`elmoformanylangs`, `bilm_tf_checkpoint`, `token_embeddings`, `sentence_embeddings`) is imported when its
subcommand runs. The three that write a model folder finish with `saving.save_converted_folder` (atomic write,
reload, float64 parity, model page).
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
