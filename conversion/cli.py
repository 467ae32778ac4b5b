"""The `elmo-convert` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .errors import ConversionError

__all__ = ["main"]

_EXAMPLES = """examples:
  elmo-convert allennlp --options elmo_2x4096_512_2048cnn_2xhighway_options.json \\
      --weights elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5 --output elmo-original
  elmo-convert allennlp --options options.json --weights weights.hdf5 --output my-elmo --overwrite

The output folder holds config.json, model.safetensors, the tokenizer files and the model code, and loads with
  AutoModel.from_pretrained("elmo-original", trust_remote_code=True)
"""


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="elmo-convert",
        description="Convert original ELMo weights to transformers model folders.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    allennlp = commands.add_parser(
        "allennlp",
        help="AllenNLP/bilm-tf options.json + weights.hdf5 -> model folder",
        description="Convert AllenNLP/bilm-tf options.json + weights.hdf5 to a transformers model folder.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    allennlp.add_argument("--options", required=True, help="the model's options.json")
    allennlp.add_argument("--weights", required=True, help="the model's weights.hdf5")
    allennlp.add_argument("--output", required=True, help="folder to create")
    allennlp.add_argument("--overwrite", action="store_true", help="replace an existing output folder")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        if args.command == "allennlp":
            from .allennlp import convert_allennlp

            model = convert_allennlp(args.options, args.weights, args.output, overwrite=args.overwrite)
            parameters = sum(parameter.numel() for parameter in model.parameters())
            print(
                f"Converted {args.weights} ({parameters:,} parameters, {model.config.num_hidden_layers} biLSTM layers"
                f" of {model.config.cell_size} cells, projection {model.config.projection_dim}) -> {args.output}"
            )
    except ConversionError as error:
        print(f"elmo-convert: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
