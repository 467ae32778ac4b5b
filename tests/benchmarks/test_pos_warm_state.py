"""benchmarks/quality/pos_warm_state.py: the warm state is the carried warm-up's final state averaged over the rows
(recomputed here one row at a time), the warm-started biLM equals ElmoModel given that state, and its features get
a cache key of their own (else the warm run would read the zero run's cached layers)."""

from __future__ import annotations

from pathlib import Path

import torch
from datasets import Dataset
from pos_warm_state import WarmStartedElmo, warm_state

from elmo_transformers.training.finetuning.feature_cache import bilm_features_key
from modeling_elmo import ElmoConfig, ElmoModel, ElmoTokenizer

WARMUP = [["the", "river", "bank", "."], ["a", "dog", "sings"], ["old", "city"], ["naïve", "café", "!"]] * 2


def _model_folder(tmp_path: Path) -> Path:
    torch.manual_seed(0)
    config = ElmoConfig(cell_size=24, projection_dim=8, char_cnn_filters=[[1, 4], [2, 4]], num_highway_layers=1)
    ElmoModel(config).save_pretrained(tmp_path / "model")
    return tmp_path / "model"


def test_warm_state_is_the_carried_final_state_averaged_over_rows(tmp_path: Path) -> None:
    model = ElmoModel.from_pretrained(_model_folder(tmp_path)).eval()
    tokenizer = ElmoTokenizer()
    rows, batches = 2, 3
    h, c = warm_state(model, tokenizer, WARMUP, rows, batches)
    finals = []
    with torch.no_grad():
        for row in range(rows):
            state = None
            for batch in range(batches):  # row `row` of each batch, one after the other
                inputs = tokenizer([WARMUP[batch * rows + row]], is_split_into_words=True, return_tensors="pt")
                state = model(**inputs, state=state, use_cache=True).state
            finals.append(state)
    torch.testing.assert_close(h, torch.stack([final[0] for final in finals]).mean(dim=0), rtol=0, atol=1e-6)
    torch.testing.assert_close(c, torch.stack([final[1] for final in finals]).mean(dim=0), rtol=0, atol=1e-6)


def test_warm_started_biLM_is_ElmoModel_from_that_state_with_its_own_cache_key(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path)
    zero = ElmoModel.from_pretrained(folder).eval()
    warm = WarmStartedElmo.from_pretrained(folder).eval()
    tokenizer = ElmoTokenizer()
    h, c = warm_state(zero, tokenizer, WARMUP, 2, 2)
    warm.set_warm_state(h, c)
    inputs = tokenizer([["a", "b", "c"], ["d"]], is_split_into_words=True, padding=True, return_tensors="pt")
    with torch.no_grad():
        actual = warm(**inputs, output_hidden_states=True).hidden_states
        state = (h.expand(-1, -1, 2, -1), c.expand(-1, -1, 2, -1))
        expected = zero(**inputs, state=state, output_hidden_states=True).hidden_states
        from_zero = zero(**inputs, output_hidden_states=True).hidden_states
    for got, want in zip(actual, expected, strict=True):
        assert torch.equal(got, want)
    assert not torch.allclose(actual[-1], from_zero[-1])
    dataset = Dataset.from_dict({"input_ids": inputs["input_ids"].tolist()})
    assert bilm_features_key(dataset, warm, "float32") != bilm_features_key(dataset, zero, "float32")
