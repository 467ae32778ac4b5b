"""The biLM's training data: vocabulary files, sentence streams and bilm-tf's window packing."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch

from elmo_transformers.common.errors import DataFileError
from elmo_transformers.training.pretraining.build_vocab import main as build_vocab
from elmo_transformers.training.pretraining.lm_vocabulary import LmVocabulary
from elmo_transformers.training.pretraining.text_stream import SentenceStream, expand_files
from elmo_transformers.training.pretraining.window_packer import WindowEncoder, WindowPacker
from modeling_elmo import ElmoTokenizer


def _write(path, text: str | bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return path


def _packer(path, *, reverse=False, batch_size=2, unroll_steps=3):
    source = SentenceStream([path], shuffle=False, loop=False)
    return WindowPacker(source, batch_size=batch_size, unroll_steps=unroll_steps, reverse=reverse)


def test_windows_match_a_hand_worked_example(tmp_path):
    corpus = _write(tmp_path / "c.txt", "a b c\nd e\nf\n")
    packer = _packer(corpus)
    # Row 0 takes "<S> a b c </S>", row 1 "<S> d e </S>"; </S> is a target only, and a sentence that does not
    # fit continues in the same row of the next window, followed by the next sentence from the shared source.
    assert packer.next_window() == (
        [["<S>", "a", "b"], ["<S>", "d", "e"]],
        [["a", "b", "c"], ["d", "e", "</S>"]],
    )
    assert packer.next_window() == (
        [["c", "<S>", "f"], [None, None, None]],
        [["</S>", "f", "</S>"], [None, None, None]],
    )
    assert packer.next_window() is None


def test_backward_windows_read_each_sentence_reversed(tmp_path):
    packer = _packer(_write(tmp_path / "c.txt", "a b c\nd e\n"), batch_size=1, unroll_steps=4)
    packer.reverse = True
    assert packer.next_window() == ([["</S>", "c", "b", "a"]], [["c", "b", "a", "<S>"]])
    assert packer.next_window() == ([["</S>", "e", "d", None]], [["e", "d", "<S>", None]])


def test_a_saved_position_resumes_the_same_windows(tmp_path):
    files = [_write(tmp_path / f"s{i}.txt", "".join(f"w{i}{j} x y{j % 3}\n" for j in range(7))) for i in range(3)]

    def packer():
        return WindowPacker(SentenceStream(files, seed=5), batch_size=3, unroll_steps=4)

    uninterrupted = packer()
    windows = [uninterrupted.next_window() for _ in range(12)]
    first = packer()
    for _ in range(5):
        first.next_window()
    resumed = packer()
    resumed.load_state_dict(first.state_dict())
    assert [resumed.next_window() for _ in range(7)] == windows[5:]
    assert resumed.source.epoch >= 1  # the stream went round all shards at least once


def test_processes_read_disjoint_sentences(tmp_path):
    path = _write(tmp_path / "c.txt", "".join(f"s{i}\n" for i in range(10)))
    seen = []
    for rank in range(2):
        stream = SentenceStream([path], seed=1, loop=False, rank=rank, world_size=2)
        seen.append({tuple(s) for s in iter(stream.next_sentence, None)})
    assert not seen[0] & seen[1] and len(seen[0] | seen[1]) == 10


def test_bad_lines_are_skipped_and_counted_with_file_and_line(tmp_path):
    path = _write(tmp_path / "c.txt", b"good line\n\xff\xfe bad\n\n  \nok\n")
    stream = SentenceStream([path], shuffle=False, loop=False)
    assert list(iter(stream.next_sentence, None)) == [["good", "line"], ["ok"]]
    report = stream.report
    assert (report.undecodable_lines, report.empty_lines, report.sentences) == (1, 2, 2)
    assert f"{path}, line 2" in report.summary()


def test_a_corpus_without_sentences_is_an_error_not_a_hang(tmp_path):
    stream = SentenceStream([_write(tmp_path / "empty.txt", "\n\n")], seed=0, loop=True)
    with pytest.raises(DataFileError, match="no sentences in"):
        stream.next_sentence()
    with pytest.raises(DataFileError, match="matches no file"):
        expand_files(str(tmp_path / "missing-*.txt"), option="--train_files")


def test_encoder_gives_char_ids_and_vocabulary_ids(tmp_path):
    vocabulary = LmVocabulary(["<S>", "</S>", "<UNK>", "a"])
    tokenizer = ElmoTokenizer()
    char_ids, word_ids = WindowEncoder(tokenizer, vocabulary)(([["<S>", "zzz", None]], [["a", "zzz", None]]))
    assert char_ids.shape == (1, 3, 50) and word_ids.tolist() == [[3, 2, -100]]
    assert char_ids[0, 0].tolist() == tokenizer.word_char_ids("<S>") and not char_ids[0, 2].any()
    assert char_ids.dtype == torch.long


def test_vocabulary_checks():
    with pytest.raises(DataFileError, match="lacks the special words <UNK>"):
        LmVocabulary(["<S>", "</S>", "a"])
    with pytest.raises(DataFileError, match="line 5: 'a' repeats line 4"):
        LmVocabulary(["<S>", "</S>", "<UNK>", "a", "a"])
    vocabulary = LmVocabulary.from_counts(Counter({"b": 2, "a": 2, "c": 5, "rare": 1}), min_count=2, max_size=5)
    assert vocabulary.words == ["<S>", "</S>", "<UNK>", "c", "a"]
    assert vocabulary.word_id("rare") == vocabulary.unk_id == 2


def test_vocabulary_file_is_read_as_bilm_tf_reads_it(tmp_path):
    """Lines stripped, each a softmax row (a blank one is refused); a missing or empty file or a line that is not
    UTF-8 is one error naming it."""
    path = _write(tmp_path / "vocab.txt", "<S>\r\n</S>\n  <UNK> \nnaïve\n")
    assert LmVocabulary.from_file(path).words == ["<S>", "</S>", "<UNK>", "naïve"]
    _write(path, "<S>\n</S>\n\n<UNK>\n")
    with pytest.raises(DataFileError, match=r"vocab\.txt, line 3: '' is not a word"):
        LmVocabulary.from_file(path)
    _write(path, "")
    with pytest.raises(DataFileError, match=r"vocab\.txt: the vocabulary is empty"):
        LmVocabulary.from_file(path)
    _write(path, b"<S>\n</S>\n<UNK>\nna\xefve\n")
    with pytest.raises(DataFileError, match=r"vocab\.txt, line 4: not UTF-8"):
        LmVocabulary.from_file(path)
    with pytest.raises(DataFileError, match=r"missing\.txt: no such vocabulary file"):
        LmVocabulary.from_file(tmp_path / "missing.txt")


def test_build_vocab_cli(tmp_path, capsys):
    _write(tmp_path / "corpus" / "a.txt", "the cat the dog\nthe end\n")
    _write(tmp_path / "corpus" / "b.txt", b"cat \xff\n")
    build_vocab(["--train_files", str(tmp_path / "corpus" / "*.txt"), "--output", str(tmp_path / "v.txt")])
    assert (tmp_path / "v.txt").read_text().split() == ["<S>", "</S>", "<UNK>", "the", "cat", "dog", "end"]
    assert "1 lines not UTF-8 skipped" in capsys.readouterr().out


def test_checkpoint_folders_and_process_count(tmp_path):
    from elmo_transformers.training.pretraining.checkpoint import (
        latest_checkpoint,
        load_process_state,
        save_process_state,
    )

    for name in ("checkpoint-5", "checkpoint-40", ".checkpoint-60.partial", "checkpoint-x"):
        (tmp_path / name).mkdir()
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-40"  # a half-written save is never picked
    folder = tmp_path / "checkpoint-40"
    state = (torch.randn(2, 2, 3, 4), torch.randn(2, 2, 3, 5))
    with torch.random.fork_rng(devices=[]):
        # Generators advanced past their seeds: restoring must give the draws that would have come next.
        torch.manual_seed(1)
        sampler = torch.Generator().manual_seed(2)
        torch.rand(5), torch.rand(5, generator=sampler)
        save_process_state(folder, 0, lstm_state=state, sampler_generator=sampler, data_state=POSITIONS)
        next_draws = torch.rand(3), torch.rand(3, generator=sampler)
        loaded = load_process_state(folder, 0, 1, packers=2)
        torch.set_rng_state(loaded["torch_rng"])
        restored_sampler = torch.Generator()
        restored_sampler.set_state(loaded["sampler_rng"])
        assert torch.equal(torch.rand(3), next_draws[0])
        assert torch.equal(torch.rand(3, generator=restored_sampler), next_draws[1])
    assert torch.equal(loaded["lstm_h"], state[0]) and torch.equal(loaded["lstm_c"], state[1])
    assert loaded["data_state"] == POSITIONS
    with pytest.raises(ValueError, match="written by 1 processes, this run has 2"):
        load_process_state(folder, 0, 2, packers=2)


# A process's text positions as pretraining saves them: one per direction.
POSITIONS = {
    "packers": [
        {"rows": [[4, 5]], "finished": False, "source": {"epoch": 0, "shard_position": 0, "sentence_position": 3}}
    ]
    * 2
}


def test_a_stray_file_named_like_a_checkpoint_is_no_checkpoint(tmp_path):
    """`--resume_from_checkpoint latest` took the file checkpoint-9 and failed, not the newest checkpoint folder."""
    from elmo_transformers.training.pretraining.checkpoint import latest_checkpoint

    (tmp_path / "checkpoint-5").mkdir()
    (tmp_path / "checkpoint-9").write_bytes(b"")
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoint-5"


@pytest.mark.parametrize(
    "positions",
    [{"packers": POSITIONS["packers"][:1]}, {"packers": [[], []]}, {"x": 1}, []],
    ids=["one of two", "not objects", "no packers", "a list"],
)
def test_text_positions_of_another_shape_are_refused_in_one_line(tmp_path, positions):
    """A positions list too short resumed into zip()'s "argument 2 is shorter than argument 1" (others: a
    traceback)."""
    from elmo_transformers.common.errors import TrainingError
    from elmo_transformers.training.pretraining.checkpoint import load_process_state, save_process_state

    folder = tmp_path / "checkpoint-4"
    folder.mkdir()
    state = (torch.zeros(2, 1, 1, 2), torch.zeros(2, 1, 1, 2))
    save_process_state(folder, 0, lstm_state=state, sampler_generator=torch.Generator(), data_state=positions)
    with pytest.raises(TrainingError) as refused:
        load_process_state(folder, 0, 1, packers=2)
    assert str(refused.value).startswith(
        f"{folder / 'process-0.json'} is damaged (expected 2 text positions under 'packers', got"
        f" {json.dumps(positions)[:40]}"
    )
