"""Pretraining ELMo's biLM the way bilm-tf did, in PyTorch, on one CPU or many GPUs (`accelerate`).

The commands: `build_vocab` (the softmax vocabulary of a corpus), `pretrain` (the training loop, checkpoints that
resume exactly), `evaluate_perplexity` (held-out perplexity as bilm-tf's `run_test`) and `model_card` (a run's model
as a Hub-ready folder); `pretrain_arguments` holds pretrain's options. What they are built from, in the order
data flows:

* `text_stream`: the corpus, shard by shard, one sentence per line, bad lines counted and skipped;
* `lm_vocabulary`: words <-> softmax rows, in bilm-tf's vocabulary file format;
* `window_packer`: streams of sentences cut into windows of `unroll_steps` words, the LSTM state carried between;
* `starting_model`: a new biLM from options or a saved one, its softmax re-mapped to the vocabulary;
* `sparse_softmax_sync`: averaging only the softmax rows a step touched, across processes;
* `perplexity`: the held-out evaluation; `metrics_log`: `metrics.jsonl` and the perplexity plot;
* `checkpoint`: checkpoint folders, written atomically, with every process's state.
"""
