"""Publish a pretraining run's model as a Hub-ready folder with a model page: `python training/model_card.py --help`.

The command is `training.pretraining.model_card` (also `python -m training.model_card`; installed: `elmo-model-
card`).
"""

if not __package__:  # run as a file (see training/_file_launch.py)
    import _file_launch  # noqa: F401

from training.pretraining.model_card import main

if __name__ == "__main__":
    main()
