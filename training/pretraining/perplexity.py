"""Held-out perplexity of a biLM, computed as bilm-tf's `run_test` did: full softmax, no dropout, the LSTM state
carried from window to window, both directions; every target word of the files counted exactly once."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from modeling_elmo import ElmoForBidirectionalLM

from .lm_vocabulary import LmVocabulary
from .text_stream import SentenceStream
from .window_packer import WindowEncoder, WindowPacker

__all__ = ["evaluate_perplexity"]


@torch.no_grad()
def evaluate_perplexity(
    model: ElmoForBidirectionalLM,
    tokenizer: Any,
    vocabulary: LmVocabulary,
    files: list[Path],
    *,
    batch_size: int = 32,
    unroll_steps: int = 20,
    progress: bool = True,
) -> dict[str, float]:
    """`perplexity` = exp(0.5 * (forward + backward mean negative log-likelihood per word)), and per direction.

    The files are read in order (no shuffling); the forward and backward streams each hold every sentence once.
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    encode = WindowEncoder(tokenizer, vocabulary)
    packers = [
        WindowPacker(
            SentenceStream(files, shuffle=False, loop=False),
            batch_size=batch_size,
            unroll_steps=unroll_steps,
            reverse=reverse,
        )
        for reverse in (False, True)
    ]
    totals, counts, state = [0.0, 0.0], [0, 0], None
    with tqdm(desc="perplexity", unit=" windows", disable=not progress, leave=False) as bar:
        while True:
            windows = [packer.next_window() for packer in packers]
            if all(window is None for window in windows):
                break
            # A direction that ran dry first gets an empty window (no targets) while the other finishes.
            encoded = [encode(window or _empty_window(batch_size, unroll_steps)) for window in windows]
            output = model(
                input_ids=encoded[0][0].to(device),
                backward_input_ids=encoded[1][0].to(device),
                labels=encoded[0][1].to(device),
                backward_labels=encoded[1][1].to(device),
                state=state,
            )
            state = output.state
            for direction, losses in enumerate((output.forward_token_losses, output.backward_token_losses)):
                totals[direction] += losses.double().sum().item()
                counts[direction] += losses.numel()
            bar.update()
    model.train(was_training)
    if not counts[0]:
        raise ValueError(f"no words to evaluate in {', '.join(map(str, files))}")
    forward, backward = (total / count for total, count in zip(totals, counts, strict=True))
    return {
        "perplexity": math.exp(0.5 * (forward + backward)),
        "forward_perplexity": math.exp(forward),
        "backward_perplexity": math.exp(backward),
        "loss": 0.5 * (forward + backward),
        "tokens": counts[0],
    }


def _empty_window(batch_size: int, unroll_steps: int):
    empty = [[None] * unroll_steps for _ in range(batch_size)]
    return empty, empty
