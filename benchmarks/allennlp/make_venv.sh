#!/usr/bin/env bash
# Creates the virtual environment with AllenNLP 0.9.0 that benchmarks/speed/bench_inference.py,
# bench_tokenizer.py and bench_embed_backends.py compare against.
#
#   bash benchmarks/allennlp/make_venv.sh [VENV]   (default: $ELMO_BENCH_ALLENNLP_VENV or /tmp/elmo-bench-allennlp-venv)
#
# allennlp==0.9.0 is installed with --no-deps: its pinned dependencies (torch 1.x, spacy 2.x, ...) do not install
# on current Pythons, and the ELMo modules need only torch, numpy, h5py and overrides (3.1.0, the API of 2019).
# benchmarks/allennlp/stubs.py stands in for the imports that those modules do not use.
# torch is pinned to the CPU build these machines carry (an unpinned torch would download a CUDA build).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

VENV="${1:-${ELMO_BENCH_ALLENNLP_VENV:-/tmp/elmo-bench-allennlp-venv}}"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${ELMO_BENCH_TORCH:-torch==2.13.0}"
WHEEL_DIR="${ELMO_BENCH_ALLENNLP_WHEELS:-/tmp/allennlp}"  # a folder holding allennlp-0.9.0-*.whl, if cached

check() {  # imports _ElmoBiLm the way the benchmark does
    PYTHONPATH="$HERE" "$VENV/bin/python" -c "import stubs, torch; stubs.import_elmo(); print('AllenNLP 0.9.0 venv ready:', '$VENV', 'torch', torch.__version__)"
}

if [ -x "$VENV/bin/python" ] && check 2>/dev/null; then
    exit 0
fi

"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q "$TORCH_SPEC" numpy h5py overrides==3.1.0
find_links=()
if compgen -G "$WHEEL_DIR/allennlp-0.9.0-*.whl" >/dev/null; then
    find_links=(--find-links "$WHEEL_DIR")
fi
"$VENV/bin/python" -m pip install -q --no-deps "${find_links[@]}" allennlp==0.9.0
check
