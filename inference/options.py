"""The choices of `elmo-embed`'s options, which its command line lists without loading torch."""

__all__ = ["DTYPE_NAMES", "FORMATS", "LAYER_CHOICES"]

LAYER_CHOICES = ("all", "top", "average", "mix")
# The model dtypes (torch's names): `elmo_transformers.inference.embedder.DTYPES` maps them to torch's dtypes.
DTYPE_NAMES = ("float32", "bfloat16", "float16")
# The output formats: one hdf5 file in AllenNLP's layout, or a folder that `datasets.load_from_disk` opens.
FORMATS = ("hdf5", "datasets")
