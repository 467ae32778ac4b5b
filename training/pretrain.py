"""Train ELMo's biLM, from scratch or from a saved model, on one CPU or many GPUs: `accelerate launch
training/pretrain.py --help`.

The command is `training.pretraining.pretrain` (also `python -m training.pretrain`; installed: `elmo-pretrain`).
"""

if not __package__:  # run as a file (see training/_file_launch.py)
    import _file_launch  # noqa: F401

from training.pretraining.pretrain import main

if __name__ == "__main__":
    main()
