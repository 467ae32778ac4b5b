"""The choices of `elmo-embed`'s options, which its command line lists without loading torch."""

__all__ = ["COMPRESSIONS", "COMPUTE_DTYPES", "FORMATS", "LAYER_CHOICES", "STORAGE_DTYPES"]

LAYER_CHOICES = ("all", "top", "average", "mix")
# The dtypes the model computes in (--dtype; torch's names): `elmo_transformers.inference.embedder.TORCH_DTYPES`
# maps them to torch's dtypes.
COMPUTE_DTYPES = ("float32", "bfloat16", "float16")
# The dtypes the vectors are stored in (`elmo_transformers.inference.storage`); the first is the default.
STORAGE_DTYPES = ("float32", "float16")
# HDF5's filters that every h5py reads without plugins; "none" (the default) stores the datasets contiguous.
COMPRESSIONS = ("none", "gzip", "lzf")
# The output formats: one hdf5 file in AllenNLP's layout, or a folder that `datasets.load_from_disk` opens.
FORMATS = ("hdf5", "datasets")
