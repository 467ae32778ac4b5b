"""What does int8 cost? POS tagging (the experiment of pos_sample_efficiency.py) with the biLM's layers from the
float32 ONNX graph against the int8 graph of `elmo-convert onnx --quantize int8`.

    python benchmarks/quality/pos_int8.py --model modeling_elmo/default_model --output_dir /tmp/int8
    python benchmarks/quality/pos_int8.py --model modeling_elmo/default_model --fractions 0.01 --seeds 0 \\
        --output_dir /tmp/int8

--model is exported with `elmo-convert onnx --quantize int8` into a temporary folder (or give such a folder with
--onnx_model). Both graphs run on onnxruntime (CPU, --threads threads) over every corpus sentence, their layers
kept in memory in --features_dtype (no feature cache); every tagger is trained with the recipe and the options of
pos_sample_efficiency.py (any of its options may be given), on the same samples and seeds.
Written to --output_dir: `pos_int8.md` (token accuracy, float32 vs int8, mean ± std over seeds).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from pos_comparison import (
    FeatureSource,
    compare_and_report,
    load_corpus,
    parse_comparison_arguments,
)
from pos_features import embedder_features

from elmo_transformers.common.errors import ElmoError
from elmo_transformers.serving import GraphEmbedder, GraphError
from elmo_transformers.serving.onnx_export import export_onnx
from modeling_elmo import ElmoConfig


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--onnx_model", type=Path, help="a folder of elmo-convert onnx --quantize int8 (else exported)")
    own, arguments = parse_comparison_arguments(parser, argv)
    corpus = load_corpus(arguments)
    with tempfile.TemporaryDirectory(prefix="pos_int8_") as temporary:
        folder = own.onnx_model or Path(temporary) / "onnx"
        try:
            if own.onnx_model is None:
                export_onnx(arguments.model, folder, quantize="int8")
            embedders = {
                name: GraphEmbedder(folder, quantized=quantized, threads=arguments.threads)
                for name, quantized in (("float32", False), ("int8", True))
            }
        except (ElmoError, GraphError) as error:
            sys.exit(f"error: {error}")

        def source(name: str) -> FeatureSource:
            return lambda: embedder_features(corpus, embedders[name], arguments)

        compare_and_report(
            {name: source(name) for name in embedders},
            ElmoConfig.from_pretrained(folder),
            corpus,
            arguments,
            scheme_key=own.scheme,
            script="pos_int8.py",
            argv=argv,
            versus="float32 vs int8 ONNX graph",
            first_column="biLM layers from",
            detail=f"model: `{arguments.model}`, exported with elmo-convert onnx --quantize int8",
        )


if __name__ == "__main__":
    main()
