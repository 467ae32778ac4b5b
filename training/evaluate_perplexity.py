"""Held-out perplexity of a biLM, computed as bilm-tf's run_test: `python training/evaluate_perplexity.py --help`.

The command is `training.pretraining.evaluate_perplexity` (also `python -m training.evaluate_perplexity`; installed:
`elmo-evaluate-perplexity`).
"""

if not __package__:  # run as a file (see training/_file_launch.py)
    import _file_launch  # noqa: F401

from training.pretraining.evaluate_perplexity import main

if __name__ == "__main__":
    main()
