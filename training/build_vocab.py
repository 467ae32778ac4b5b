"""Build the softmax vocabulary of a biLM from a text corpus: `python training/build_vocab.py --help`.

The command is `training.pretraining.build_vocab` (also `python -m training.build_vocab`; installed: `elmo-build-
vocab`).
"""

if not __package__:  # run as a file (see training/_file_launch.py)
    import _file_launch  # noqa: F401

from training.pretraining.build_vocab import main

if __name__ == "__main__":
    main()
