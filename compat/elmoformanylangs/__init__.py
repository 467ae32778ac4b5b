"""ELMoForManyLangs' `Embedder` (HIT-SCIR, `elmoformanylangs/elmo.py`, 0.0.4.post2), computed by this package's
model: change `from elmoformanylangs import Embedder` to `from elmo_transformers.compat.elmoformanylangs import
Embedder` and the rest of the code stays.

```python
embedder = Embedder("zhs.model")  # their model folder (or an NLPL archive of one), converted on load
vectors = embedder.sents2elmo([["今天", "天气", "真好"], ["潮水", "退", "了"]])  # one (words, 1024) array a sentence
```

The numbers are those of the converted model (`elmo-convert elmoformanylangs`), which are ELMoForManyLangs' own
for a batch read from the zero LSTM state. What differs (docs/migration.md): their encoder carries its LSTM state
from batch to batch and from call to call (their batches in a random order), so their vectors of a sentence
change with what was read before it; here every sentence starts from the zero state, the numbers their first batch
after loading gives, whatever the batch and the call. `output_layer` takes -1, -2 and the layer indexes; any other
value is a `ValueError` (theirs indexed the layers with it, -3 being layer 0).
"""

from .sentence_embedder import AVERAGE_OF_LAYERS, EVERY_LAYER, Embedder

__all__ = ["AVERAGE_OF_LAYERS", "EVERY_LAYER", "Embedder"]
