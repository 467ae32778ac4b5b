"""Fine-tuning ELMo's task heads (`ElmoForTokenClassification`, `ElmoForSequenceClassification`) with the Trainer.

The commands: `run_token_classification` and `run_classification`, each stating its task (`workflow.FineTuningTask`:
the head, how JSON lines become a dataset, the metrics), whose `main` runs what they share (`workflow`): the
arguments (`arguments`: the model's mixing and head options, the data files), the frozen-biLM feature cache
(`feature_cache`, batched by `collator`), the metrics (`evaluation`, from the local `evaluate` modules in
`metrics/`) and the learned layer weights written after training (`layer_weights`). `jsonl` reads the data files
with errors that name the file and the line.
"""
