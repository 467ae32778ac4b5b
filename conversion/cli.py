"""The `elmo-convert` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from common.errors import ElmoError, report_error

from .variants import VARIANTS

__all__ = ["main"]

_EXAMPLES = """examples:
  elmo-convert allennlp --options elmo_2x4096_512_2048cnn_2xhighway_options.json \\
      --weights elmo_2x4096_512_2048cnn_2xhighway_weights.hdf5 --output elmo-original
  elmo-convert allennlp --variant small --weights elmo_2x1024_128_2048cnn_1xhighway_weights.hdf5 --output elmo-small
  elmo-convert elmoformanylangs --model-dir 144 --language zh --output elmo-zh
  elmo-convert to-allennlp --model elmo-original --output elmo-original-allennlp
  elmo-convert token-embeddings --model elmo-original --vocab vocab.txt --output elmo_token_embeddings.hdf5
  elmo-convert bilm-tf-checkpoint --checkpoint checkpoints/model.ckpt-935588 --options checkpoints/options.json \\
      --vocab vocab-2016-09-10.txt --output elmo-lm
  elmo-convert sentence-transformers --model elmo-original --output elmo-original-st --layers average

A model folder holds config.json, model.safetensors, the tokenizer files, the model code and its model page
(README.md, with the measured float32 vs float64 parity), and loads with
  AutoModel.from_pretrained("elmo-original", trust_remote_code=True)
A language-model folder (bilm-tf-checkpoint) also holds the softmax and vocab.txt, and loads with
  AutoModelForPreTraining.from_pretrained("elmo-lm", trust_remote_code=True)  (or AutoModel: the biLM alone)
A sentence-transformers folder (averaged ELMo sentence vectors; needs sentence-transformers>=6) loads with
  SentenceTransformer("elmo-original-st", trust_remote_code=True)
"""


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="elmo-convert",
        description="Convert ELMo weights between the original formats and transformers model folders.",
        epilog=_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return commands.add_parser(
            name,
            help=summary,
            description=summary,
            epilog=_EXAMPLES,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    allennlp = command("allennlp", "AllenNLP/bilm-tf options.json + weights.hdf5 -> model folder")
    described_by = allennlp.add_mutually_exclusive_group(required=True)
    described_by.add_argument("--options", help="the model's options.json")
    described_by.add_argument(
        "--variant", choices=sorted(VARIANTS), help="a released model's options, instead of --options"
    )
    allennlp.add_argument("--weights", required=True, help="the model's weights.hdf5")
    allennlp.add_argument("--output", required=True, help="model folder to create")

    many_langs = command("elmoformanylangs", "ELMoForManyLangs model folder -> model folder")
    many_langs.add_argument("--model-dir", required=True, help="folder with config.json, char.dic, *.pkl")
    many_langs.add_argument("--output", required=True, help="model folder to create")

    to_allennlp = command("to-allennlp", "model folder -> options.json + weights.hdf5 in the original layout")
    to_allennlp.add_argument("--model", required=True, help="model folder written by this package")
    to_allennlp.add_argument("--output", required=True, help="folder to create for options.json and weights.hdf5")

    token_embeddings = command("token-embeddings", "token layer of a vocabulary -> bilm-tf's token embedding hdf5")
    token_embeddings.add_argument("--model", required=True, help="model folder written by this package")
    token_embeddings.add_argument("--vocab", required=True, help="vocabulary file, one word per line")
    token_embeddings.add_argument("--output", required=True, help="hdf5 file to create (dataset 'embedding')")
    token_embeddings.add_argument("--batch-size", type=int, default=1024, help="words per batch (default 1024)")

    checkpoint = command(
        "bilm-tf-checkpoint",
        "bilm-tf training checkpoint (biLM + softmax) -> language-model folder (ElmoForBidirectionalLM)",
    )
    checkpoint.add_argument(
        "--checkpoint",
        required=True,
        help="checkpoint prefix (model.ckpt-N, the .index file's name without '.index'), or the training folder",
    )
    checkpoint.add_argument("--options", required=True, help="the options.json bilm-tf wrote for the training run")
    checkpoint.add_argument(
        "--vocab", required=True, help="the training vocabulary: one word per softmax row, <S>, </S>, <UNK> first"
    )
    checkpoint.add_argument("--output", required=True, help="model folder to create")

    sentence = command(
        "sentence-transformers",
        "model folder -> sentence-transformers folder: averaged ELMo sentence vectors (mixed layers, mean over words)",
    )
    sentence.add_argument("--model", required=True, help="ELMo model folder (any written by this package)")
    sentence.add_argument("--output", required=True, help="sentence-transformers folder to create")
    sentence.add_argument(
        "--layers",
        default="average",
        help="each word's vector: average (mean of all layers; default), first-two (mean of the token layer and the "
        "first biLSTM layer, the top layers are not run), concat (all layers side by side), or one layer's index "
        "(0 = token layer, 1..L = biLSTM layers)",
    )
    sentence.add_argument("--license", help="license for the model page (default: the source model page's)")
    sentence.add_argument("--language", help="language for the model page (default: the source model page's)")
    sentence.add_argument("--push-to-hub", metavar="REPO", help="upload the folder to this Hub model repo")

    for subparser in (allennlp, many_langs, checkpoint):
        subparser.add_argument("--license", default="apache-2.0", help="license of the weights, for the model page")
        subparser.add_argument("--language", default="en", help="language of the weights, for the model page")
        subparser.add_argument("--push-to-hub", metavar="REPO", help="upload the folder to this Hub model repo")
    for subparser in (allennlp, many_langs, to_allennlp, token_embeddings, checkpoint, sentence):
        subparser.add_argument("--overwrite", action="store_true", help="replace an existing output")
    return parser


def _run(args: argparse.Namespace) -> str:
    """Carry out the command; returns its one-line summary."""
    if args.command == "allennlp":
        from common.options import read_options

        from .allennlp import convert_allennlp
        from .model_card import SourceDescription

        weights = Path(args.weights)
        if args.variant:
            variant = VARIANTS[args.variant]
            options, options_source = variant.options, f"variant {args.variant}"
            source = SourceDescription(
                f"the AllenNLP release {variant.release}",
                (weights,),
                args.license,
                args.language,
                variant.training_data,
            )
        else:
            options, options_source = read_options(args.options), args.options
            source = SourceDescription(
                f"the ELMo weights {weights.name}",
                (weights,),
                args.license,
                args.language,
                "the corpus its source was trained on (not recorded in the source files)",
                options_file=Path(args.options),
            )
        model, parity = convert_allennlp(
            options,
            weights,
            args.output,
            source=source,
            options_source=options_source,
            repo_id=args.push_to_hub,
            overwrite=args.overwrite,
        )
        return _conversion_summary(args, weights, model, parity)
    if args.command == "elmoformanylangs":
        from .elmoformanylangs import convert_elmoformanylangs
        from .model_card import SourceDescription

        model_dir = Path(args.model_dir)
        source = SourceDescription(
            f"the ELMoForManyLangs model {model_dir.resolve().name}",
            (model_dir / "token_embedder.pkl", model_dir / "encoder.pkl"),
            args.license,
            args.language,
            "the CoNLL 2018 shared task raw text of its language (20M words sampled from Wikipedia and Common Crawl)",
        )
        model, parity = convert_elmoformanylangs(
            model_dir, args.output, source=source, repo_id=args.push_to_hub, overwrite=args.overwrite
        )
        return _conversion_summary(args, model_dir, model, parity)
    if args.command == "to-allennlp":
        from .allennlp import export_allennlp

        output = export_allennlp(args.model, args.output, overwrite=args.overwrite)
        return f"Exported {args.model} -> {output / 'options.json'}, {output / 'weights.hdf5'}"
    if args.command == "bilm-tf-checkpoint":
        from common.options import read_options

        from .bilm_tf_checkpoint import checkpoint_files, convert_bilm_tf_checkpoint
        from .model_card import SourceDescription

        files = checkpoint_files(args.checkpoint)
        source = SourceDescription(
            f"the bilm-tf training checkpoint {files[0].with_suffix('').name}",
            files,
            args.license,
            args.language,
            "the corpus its checkpoint was trained on (not recorded in the checkpoint)",
            options_file=Path(args.options),
        )
        model, parity = convert_bilm_tf_checkpoint(
            args.checkpoint,
            read_options(args.options),
            args.vocab,
            args.output,
            source=source,
            options_source=args.options,
            repo_id=args.push_to_hub,
            overwrite=args.overwrite,
        )
        summary = _conversion_summary(args, Path(args.checkpoint), model.elmo, parity)
        return f"{summary}; with its softmax of {model.config.vocab_size:,} words and vocab.txt"
    if args.command == "sentence-transformers":
        from .sentence_embeddings import convert_to_sentence_transformers

        model = convert_to_sentence_transformers(
            args.model,
            args.output,
            layers=args.layers,
            license=args.license,
            language=args.language,
            repo_id=args.push_to_hub,
            overwrite=args.overwrite,
        )
        if args.push_to_hub:
            from .hub import push_folder

            push_folder(args.output, args.push_to_hub)
        return (
            f"Wrote {args.output}: {args.model} as a sentence-transformers model, --layers {model[0].layers} and the"
            f" mean over words, {model.get_embedding_dimension()} dimensions; load it with"
            f' SentenceTransformer("{args.output}", trust_remote_code=True)'
        )
    from .token_embeddings import write_token_embeddings

    count = write_token_embeddings(
        args.model, args.vocab, args.output, batch_size=args.batch_size, overwrite=args.overwrite
    )
    return f"Wrote the token layer of {count:,} words -> {args.output}"


def _conversion_summary(args: argparse.Namespace, source: Path, model, parity: float) -> str:
    """Push the new folder if asked, and say what was converted."""
    if args.push_to_hub:
        from .hub import push_folder

        push_folder(args.output, args.push_to_hub)
    config = model.config
    parameters = sum(parameter.numel() for parameter in model.parameters())
    return (
        f"Converted {source} ({parameters:,} parameters, {config.num_hidden_layers} biLSTM layers of"
        f" {config.cell_size} cells, projection {config.projection_dim}) -> {args.output};"
        f" max |float32 - float64 source| at any layer: {parity:.2e}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = _build_parser().parse_args(argv)
    try:
        print(_run(args))
    except ElmoError as error:
        return report_error("elmo-convert", error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
