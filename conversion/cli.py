"""The `elmo-convert` command. Parsing its arguments imports no torch (`elmo_transformers.conversion.command`, each
subcommand's parser built from its options' dataclass in `convert_options`): `--help` and an argument error come at
once; the converter a subcommand needs is imported when it runs, and takes the options."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from elmo_transformers.common.errors import ConversionError, ElmoError, report_error, report_interruption
from elmo_transformers.common.extras import missing_dependencies_refused
from elmo_transformers.common.processes import Terminated, terminations_interrupt

from .command import COMMANDS, ConverterCommand

__all__ = ["build_parser", "main"]

_EXAMPLES = """examples:
  elmo-convert allennlp --options elmo_2x4096_512_2048cnn_2xhighway_options.json \\
      --weights elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5 --output elmo-original
  elmo-convert allennlp --variant small --weights elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5 --output elmo-small
  elmo-convert allennlp --archive 209.zip --output elmo-nlpl-209 --license cc-by-4.0
  elmo-convert elmoformanylangs --model 144 --language zh --output elmo-zh
  elmo-convert to-allennlp --model elmo-original --output elmo-original-allennlp
  elmo-convert token-embeddings --model elmo-original --vocab vocab.txt --output elmo_token_embeddings.hdf5
  elmo-convert bilm-tf-checkpoint --checkpoint checkpoints/model.ckpt-935588 --options checkpoints/options.json \\
      --vocab vocab-2016-09-10.txt --output elmo-lm
  elmo-convert sentence-transformers --model elmo-original --output elmo-original-st --layers average
  elmo-convert onnx --model elmo-original --output elmo-original-onnx --quantize int8
  elmo-convert onnx --model elmo-original --output elmo-original-onnx --triton-repository triton-models

A model folder holds config.json, model.safetensors, the tokenizer files, the model code and its model page
(README.md, with the measured float32 vs float64 parity), and loads with
  AutoModel.from_pretrained("elmo-original", trust_remote_code=True)
A language-model folder (bilm-tf-checkpoint) also holds the softmax and vocab.txt, and loads with
  AutoModelForPreTraining.from_pretrained("elmo-lm", trust_remote_code=True)  (or AutoModel: the biLM alone)
A sentence-transformers folder (averaged ELMo sentence vectors; needs sentence-transformers>=6) loads with
  SentenceTransformer("elmo-original-st", trust_remote_code=True)
"""


def build_parser(commands: Sequence[ConverterCommand]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="elmo-convert",
        allow_abbrev=False,
        description="Convert ELMo weights between the original formats and transformers model folders.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in commands:
        subparser = subparsers.add_parser(
            command.name,
            help=command.summary,
            description=command.summary,
            allow_abbrev=False,
            epilog=_EXAMPLES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        command.options.add_arguments(subparser)
    return parser


def _kept_after_interruption(output: str, uploading_to: str | None) -> str:
    """What a Ctrl-C leaves: every output is written whole or not at all (`common.atomic_output`), and the upload
    to the Hub comes once it is written."""
    if uploading_to is None:
        return f"nothing was written: {output} is as it was; run the command again"
    return f"{output} is written, its upload was not finished: hf upload {uploading_to} {output}"


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser(COMMANDS).parse_args(argv)
    command = next(command for command in COMMANDS if command.name == args.command)
    repo, uploading = vars(args).get("push_to_hub"), False
    try:
        with terminations_interrupt():  # (SIGTERM cleans up as a Ctrl-C does)
            options = command.options.from_arguments(args)  # (each option's own checks)
            # Torch is imported here, once the arguments are parsed: seconds in which a Ctrl-C is caught too.
            with missing_dependencies_refused(ConversionError):  # (an install with --no-deps)
                from modeling_elmo.native_elmo import set_native_libraries

                set_native_libraries()  # before the first kernel: the parity measured is that of every run
                summary = command.run(options)
            if repo:
                from .hub import push_folder

                uploading = True
                push_folder(args.output, repo)
    except ElmoError as error:
        return report_error("elmo-convert", error)
    except KeyboardInterrupt as interrupt:
        report_interruption("elmo-convert", _kept_after_interruption(args.output, repo if uploading else None))
        return Terminated.exit_status if isinstance(interrupt, Terminated) else 130
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
