"""`elmo-convert sentence-transformers`: an ELMo model folder -> a folder that `SentenceTransformer` loads.

The folder holds the biLM as it was (config.json, model.safetensors, the tokenizer and the model code), the ELMo
module (`modeling_elmo/sentence_elmo.py`, settings in `sentence_bert_config.json`), a mean `Pooling` module
(`1_Pooling/`), `modules.json` and a model page saying how the words were mixed and pooled.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from huggingface_hub import ModelCard, ModelCardData
from transformers.utils import CONFIG_NAME

from elmo_transformers.common.atomic_output import atomic_output_folder
from elmo_transformers.common.checksums import record_checksums
from elmo_transformers.common.disk_space import require_room
from elmo_transformers.common.errors import ConversionError
from elmo_transformers.common.model_card_template import render_model_card
from elmo_transformers.common.model_folder import require_model_folder
from modeling_elmo import ElmoConfig

from .convert_options import SentenceTransformersOptions
from .saving import output_options, weight_bytes

if TYPE_CHECKING:  # sentence-transformers is an optional dependency, imported when a conversion runs
    from sentence_transformers import SentenceTransformer

    from modeling_elmo.sentence_elmo import ElmoSentenceEncoder

__all__ = ["SOURCE_CARD", "convert_to_sentence_transformers", "describe_layers", "run"]

TEMPLATE = Path(__file__).with_name("sentence_model_card.md")
SOURCE_CARD = "elmo_model_card.md"  # the source folder's own README.md, kept beside the new page
_PACKAGE_PREFIX = "modeling_elmo."  # modules.json names classes saved from the package by their package path


def describe_layers(layers: str | int, num_hidden_layers: int) -> tuple[str, str]:
    """What each word's vector is under a `layers` setting, in words and as the Python expression over the
    biLM's `hidden_states` (`layers`) that computes it, for the model page."""
    if layers == "average":
        return (
            f"the mean of all {num_hidden_layers + 1} layers (the token layer and the {num_hidden_layers} biLSTM"
            " layers)",
            "torch.stack(layers).mean(dim=0)",
        )
    if layers == "first-two":
        return (
            "the mean of the token layer and the first biLSTM layer (Reimers & Gurevych's first two layers, with"
            " equal weights; the biLSTM layers above are not run)",
            "torch.stack(layers[:2]).mean(dim=0)",
        )
    if layers == "concat":
        return (
            f"all {num_hidden_layers + 1} layers side by side (the token layer and the {num_hidden_layers} biLSTM"
            " layers, concatenated)",
            "torch.cat(layers, dim=-1)",
        )
    if layers == 0:
        return "the token layer alone (context-free: the character CNN's vector, twice)", "layers[0]"
    return f"biLSTM layer {layers} alone", f"layers[{layers}]"


def convert_to_sentence_transformers(
    model_dir: str | Path,
    output: str | Path,
    *,
    layers: str | int = "average",
    license: str | None = None,
    language: str | None = None,
    repo_id: str | None = None,
    overwrite: bool = False,
    space_check: bool = True,
) -> SentenceTransformer:
    """Write `output`, a sentence-transformers folder of the ELMo model in `model_dir` whose word vectors are
    mixed by `layers` (see `modeling_elmo.sentence_elmo.LAYER_SCHEMES`) and averaged. `license` and `language`
    default to the source model page's; `repo_id` is what the page's snippets load (default: the folder's name).
    Returns the `SentenceTransformer` model. Unless `space_check` is off, a disk too small for the weights is
    refused before they are written."""
    try:
        from sentence_transformers import SentenceTransformer
        from sentence_transformers.sentence_transformer.modules import Pooling

        from modeling_elmo.sentence_elmo import ElmoSentenceEncoder, layer_scheme
    except ImportError as error:
        raise ConversionError(
            f"elmo-convert sentence-transformers needs sentence-transformers>=6 (pip install "
            f"'sentence-transformers>=6'): {error}"
        ) from error
    model_dir, output = Path(model_dir), Path(output)
    try:
        layer_scheme(layers, _elmo_config(model_dir).num_hidden_layers)
    except ValueError as error:
        raise ConversionError(f"--layers: {error}") from error
    try:
        encoder = ElmoSentenceEncoder(str(model_dir), layers)
    except OSError as error:
        raise ConversionError(f"{model_dir}: cannot load the ELMo model: {str(error).splitlines()[0]}") from error
    pooling = Pooling(encoder.get_embedding_dimension(), pooling_mode="mean")
    model = SentenceTransformer(modules=[encoder, pooling], device="cpu", similarity_fn_name="cosine")
    with atomic_output_folder(output, overwrite=overwrite, inputs=(model_dir,)) as staging:
        require_room(output, weight_bytes(model), "the weights", space_check=space_check)
        model.save(str(staging), create_model_card=False)
        _name_modules_by_their_file(staging / "modules.json")
        _write_model_card(staging, encoder, model_dir, license, language, repo_id or output.name)
        record_checksums(staging)
    return model


def _elmo_config(model_dir: Path) -> ElmoConfig:
    """The configuration of the ELMo model in `model_dir`, checked."""
    require_model_folder(model_dir, ConversionError)
    try:
        return ElmoConfig.from_pretrained(model_dir)
    except ValueError as error:
        raise ConversionError(f"{model_dir / CONFIG_NAME}: {error}") from error


def _name_modules_by_their_file(modules_file: Path) -> None:
    """sentence-transformers records a class saved from this package as `modeling_elmo.sentence_elmo.X`, which
    only imports where the package is installed; the folder carries the file, so `sentence_elmo.X` loads anywhere
    (as remote code)."""
    modules = json.loads(modules_file.read_text(encoding="utf-8"))
    for module in modules:
        module["type"] = module["type"].removeprefix(_PACKAGE_PREFIX)
    modules_file.write_text(json.dumps(modules, indent=2), encoding="utf-8")


def _write_model_card(
    folder: Path, encoder: ElmoSentenceEncoder, model_dir: Path, license: str | None, language: str | None, repo_id: str
) -> ModelCard:
    """README.md of the sentence-transformers folder; the source's own page is kept as `SOURCE_CARD`."""
    source = ModelCard.load(model_dir / "README.md") if (model_dir / "README.md").is_file() else None
    if source is not None:
        shutil.copyfile(model_dir / "README.md", folder / SOURCE_CARD)
    source_data = source.data if source is not None else ModelCardData()
    description, expression = describe_layers(encoder.layers, encoder.model.config.num_hidden_layers)
    source_title = _page_title(source) if source is not None else None
    source_description = f"{source_title} (`{model_dir.name}`)" if source_title else f"`{model_dir.name}`"
    card_data = ModelCardData(
        library_name="sentence-transformers",
        pipeline_tag="sentence-similarity",
        license=license or source_data.license,
        language=language or source_data.language,
        datasets=source_data.datasets,
        tags=["sentence-transformers", "sentence-similarity", "feature-extraction", "elmo", "remote-code"],
    )
    return render_model_card(
        folder,
        encoder.model,
        card_data,
        template=TEMPLATE,
        model_name=f"Averaged ELMo sentence embeddings ({encoder.layers}): {model_dir.name}",
        repo_id=repo_id,
        layers=encoder.layers,
        layers_description=description,
        mix_expression=expression,
        dimension=encoder.get_embedding_dimension(),
        source_description=source_description,
        source_card=SOURCE_CARD if source is not None else None,
    )


def _page_title(card: ModelCard) -> str | None:
    """The page's first top-level heading."""
    return next((line[2:].strip() for line in card.text.splitlines() if line.startswith("# ")), None)


def run(options: SentenceTransformersOptions) -> str:
    model = convert_to_sentence_transformers(
        options.model,
        options.output,
        layers=options.layers,
        license=options.license,
        language=options.language,
        **output_options(options),
    )
    return (
        f"Wrote {options.output}: {options.model} as a sentence-transformers model, --layers {model[0].layers} and the"
        f" mean over words, {model.get_embedding_dimension()} dimensions; load it with"
        f' SentenceTransformer("{options.output}", trust_remote_code=True)'
    )
