"""Drop-in replacements for the APIs of older ELMo packages, computed by this package's model.

Change one import and old code runs on today's Python, torch and transformers:

- ``elmo_transformers.compat.allennlp``: AllenNLP 0.9's ``ElmoEmbedder``, ``Elmo``, ``batch_to_ids``, ``ScalarMix``;
- ``elmo_transformers.compat.elmoformanylangs``: ELMoForManyLangs' ``Embedder``;
- ``elmo_transformers.compat.simple_elmo``: simple_elmo's ``ElmoModel``.

docs/migration.md lists each old call, its one-line change and what differs.
"""
