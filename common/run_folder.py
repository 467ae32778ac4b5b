"""The layout of a pretraining run's output folder (`elmo-pretrain --output_dir`), which `pretrain` writes, the model
page of a trained model (`training.pretraining.model_card`) reads and `elmo-convert onnx` keeps out of a graph's
folder:

    OUTPUT_DIR/checkpoint-N/        the checkpoints (training.pretraining.checkpoint names their files)
    OUTPUT_DIR/metrics.jsonl        the training and validation metrics, a JSON object a line
    OUTPUT_DIR/model/               the final model folder, with the run's records beside the model's files:
        eval_results.json           the step and the last validation perplexity
        training_args.json          the run's command-line arguments
        perplexity.png              the perplexity plot (runs with --validation_files)
"""

from __future__ import annotations

__all__ = [
    "EVAL_RESULTS_FILE",
    "METRICS_FILE",
    "MODEL_FOLDER",
    "PERPLEXITY_PLOT_FILE",
    "TRAINING_ARGS_FILE",
    "TRAINING_RECORDS",
]

METRICS_FILE = "metrics.jsonl"
MODEL_FOLDER = "model"
EVAL_RESULTS_FILE = "eval_results.json"
TRAINING_ARGS_FILE = "training_args.json"
PERPLEXITY_PLOT_FILE = "perplexity.png"
# The run's records in its model folder: its language model's perplexity and the run's arguments.
TRAINING_RECORDS = (EVAL_RESULTS_FILE, PERPLEXITY_PLOT_FILE, TRAINING_ARGS_FILE)
