"""AllenNLP 0.9's LSTM state carried from call to call (`allennlp.modules.encoder_base._EncoderBase` with
`stateful=True`, as its `ElmoLstm` ran), in `ElmoModel`'s state layout.

What AllenNLP did, step by step, and this class does:
- the first call starts every row from zeros; the state kept has one row per batch row;
- a later call's row k starts from the kept row k; a batch larger than the rows kept first gains zero rows (kept
  from then on), a smaller one uses the first rows only (sorting rows by length, as AllenNLP did, is internal to
  the LSTM: a row's state stays the row's);
- after the call, kept row k becomes row k's final state where that row ran (its layer-0 output state is not all
  zeros: AllenNLP's test; every row runs, as the sentence markers make each at least 2 long), the other kept rows
  stay as they were, rows past the batch included.

With `stateful=False` every call starts from zeros and nothing is kept: a sentence's vectors depend on nothing but
the sentence.
"""

from __future__ import annotations

import torch

__all__ = ["CarriedState", "LstmState"]

LstmState = tuple[torch.Tensor, torch.Tensor]


class CarriedState:
    """The state kept between calls: `(h, c)` of shapes (2, layers, rows, P) and (2, layers, rows, C), or None."""

    def __init__(self, *, stateful: bool = True) -> None:
        self.stateful = stateful
        self._states: LstmState | None = None

    @property
    def states(self) -> LstmState | None:
        """The kept `(h, c)` (directions, layers, rows, width), or None before the first call (or after a reset)."""
        return self._states

    def initial(self, batch_size: int) -> LstmState | None:
        """The state a batch of `batch_size` rows starts from (None: zeros), growing the kept rows to the batch."""
        if not self.stateful or self._states is None:
            return None
        kept = self._states[0].shape[2]
        if batch_size > kept:
            self._states = tuple(
                torch.cat([state, state.new_zeros(*state.shape[:2], batch_size - kept, state.shape[3])], dim=2)
                for state in self._states
            )
        return tuple(state[:, :, :batch_size] for state in self._states)

    def update(self, final: LstmState) -> None:
        """Keep each row's final state where the row ran (AllenNLP's `_update_states`)."""
        if not self.stateful:
            return
        final = tuple(state.detach() for state in final)
        if self._states is None:
            self._states = final
            return
        batch = final[0].shape[2]
        ran = final[0][:, 0].transpose(0, 1).reshape(batch, -1).sum(dim=-1) != 0.0  # layer 0's [forward; backward]
        kept_out = (~ran).to(final[0].dtype)[None, None, :, None]
        self._states = tuple(
            torch.cat([new + old[:, :, :batch] * kept_out, old[:, :, batch:]], dim=2)
            for old, new in zip(self._states, final, strict=True)
        )

    def reset_states(self, mask: torch.Tensor | None = None) -> None:
        """Forget the kept state (AllenNLP's `reset_states`): all of it, or the rows where `mask` (rows,) is 1."""
        if mask is None or self._states is None:
            self._states = None
            return
        rows = self._states[0].shape[2]
        if mask.shape[0] != rows:
            raise ValueError(
                "Trying to reset states using mask with incorrect batch size. "
                f"Expected batch size: {rows}. Provided batch size: {mask.shape[0]}."
            )
        keep = (1 - mask.to(self._states[0].dtype)).view(1, 1, rows, 1)
        self._states = tuple((state * keep).detach() for state in self._states)
