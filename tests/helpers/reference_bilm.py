"""Independent float64 NumPy reference of the original (bilm-tf) ELMo biLM forward pass.

Written only from the reference text /work/shared/ELMO_REFERENCE.md (sections 1 and 2), without reading or
importing the package under test.  It favours obvious correctness over speed: plain loops over words and time
steps, one sentence at a time, everything in float64.

Public API
----------
- ``reference_char_ids(word, max_chars=50) -> np.ndarray`` (int64, shape ``(max_chars,)``)
- ``ReferenceBiLM(options, weights)``
    - ``token_layer(words) -> np.ndarray`` of shape ``(len(words), P)``
    - ``run_sentence(words, state=None) -> (layers, new_state)``
    - ``zero_state() -> state``
    - ``clip_stats``: running maxima of ``|c|`` and ``|h|`` *before* clipping (lets tests check that clipping
      was actually exercised); reset with ``reset_clip_stats()``.

State structure
---------------
``state`` is a tuple ``(forward, backward)``; each direction is a list with one ``(h, c)`` tuple per LSTM layer,
``h`` of shape ``(P,)`` (projected output, without the residual) and ``c`` of shape ``(C,)`` (clipped cell).
``None`` means all zeros.  ``new_state`` holds the forward state after ``</S>`` and the backward state after
``<S>`` (the last step each direction processed).
"""

from __future__ import annotations

import numpy as np

BOS_CHAR = 256
EOS_CHAR = 257
BOW_CHAR = 258
EOW_CHAR = 259
PAD_CHAR = 260

BOS_WORD = "<S>"
EOS_WORD = "</S>"

State = tuple[list[tuple[np.ndarray, np.ndarray]], list[tuple[np.ndarray, np.ndarray]]]


def reference_char_ids(word: str, max_chars: int = 50) -> np.ndarray:
    """Character ids of one word (after the +1 shift, so 0 is free for "no word here")."""
    if word == BOS_WORD:
        body = [BOS_CHAR]
    elif word == EOS_WORD:
        body = [EOS_CHAR]
    else:
        body = list(word.encode("utf-8", "ignore")[: max_chars - 2])
    slots = [BOW_CHAR, *body, EOW_CHAR]
    slots = slots + [PAD_CHAR] * (max_chars - len(slots))
    return np.asarray(slots, dtype=np.int64) + 1


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def _clip(x: np.ndarray, limit) -> np.ndarray:
    if limit is None:
        return x
    return np.clip(x, -float(limit), float(limit))


class ReferenceBiLM:
    """The biLM of ``options`` (options.json structure) with ``weights`` keyed by hdf5 dataset names."""

    def __init__(self, options: dict, weights: dict[str, np.ndarray]):
        lstm = options["lstm"]
        cnn = options["char_cnn"]
        self.max_chars = int(cnn.get("max_characters_per_token", 50))
        self.filters = [(int(w), int(n)) for w, n in cnn["filters"]]
        self.n_highway = int(cnn.get("n_highway") or 0)
        activation = cnn.get("activation", "relu")
        if activation == "relu":
            self.activation = _relu
        elif activation == "tanh":
            self.activation = np.tanh
        else:
            raise ValueError(f"unknown activation {activation!r}")
        self.n_layers = int(lstm["n_layers"])
        self.cell_dim = int(lstm["dim"])
        self.proj_dim = int(lstm["projection_dim"])
        self.cell_clip = lstm.get("cell_clip")
        self.proj_clip = lstm.get("proj_clip")
        self.skip = bool(lstm.get("use_skip_connections") or False)

        def get(name: str) -> np.ndarray:
            return np.asarray(weights[name], dtype=np.float64)

        # Row 0 (char id 0, "no word") is an extra all-zero row in front of the 261 stored rows.
        char_embed = get("char_embed")
        self.char_embed = np.concatenate([np.zeros((1, char_embed.shape[1])), char_embed], axis=0)

        self.conv = []
        for i, (width, n) in enumerate(self.filters):
            kernel = get(f"CNN/W_cnn_{i}")  # (1, w, E, n)
            assert kernel.shape[1] == width and kernel.shape[3] == n, (kernel.shape, width, n)
            self.conv.append((kernel[0], get(f"CNN/b_cnn_{i}")))

        self.highway = []
        for k in range(self.n_highway):
            prefix = f"CNN_high_{k}/"
            self.highway.append(
                (
                    get(prefix + "W_carry"),
                    get(prefix + "b_carry"),
                    get(prefix + "W_transform"),
                    get(prefix + "b_transform"),
                )
            )
        self.w_proj = get("CNN_proj/W_proj")
        self.b_proj = get("CNN_proj/b_proj")

        # self.lstm[d][l] = (W_0 (in + P, 4C), B (4C,), W_P_0 (C, P)); d = 0 forward, 1 backward.
        self.lstm = []
        for d in range(2):
            cells = []
            for layer in range(self.n_layers):
                prefix = f"RNN_{d}/RNN/MultiRNNCell/Cell{layer}/LSTMCell/"
                cells.append((get(prefix + "W_0"), get(prefix + "B"), get(prefix + "W_P_0")))
            self.lstm.append(cells)
        self.reset_clip_stats()

    # ------------------------------------------------------------------ token layer
    def reset_clip_stats(self) -> None:
        self.clip_stats = {"max_abs_cell": 0.0, "max_abs_proj": 0.0}

    def token_vector(self, word: str) -> np.ndarray:
        """Context-free token vector (P,) of one word."""
        ids = reference_char_ids(word, self.max_chars)
        emb = self.char_embed[ids]  # (max_chars, E)
        features = []
        for kernel, bias in self.conv:
            width = kernel.shape[0]
            n_pos = self.max_chars - width + 1
            outputs = np.empty((n_pos, kernel.shape[2]))
            for p in range(n_pos):
                window = emb[p : p + width]  # (w, E)
                outputs[p] = np.einsum("we,wen->n", window, kernel) + bias
            features.append(self.activation(outputs.max(axis=0)))
        x = np.concatenate(features)
        for w_carry, b_carry, w_transform, b_transform in self.highway:
            gate = _sigmoid(x @ w_carry + b_carry)
            x = gate * _relu(x @ w_transform + b_transform) + (1.0 - gate) * x
        return x @ self.w_proj + self.b_proj

    def token_layer(self, words: list[str]) -> np.ndarray:
        """Token vectors (len(words), P) of the words as given (no sentence markers added)."""
        out = np.zeros((len(words), self.proj_dim))
        for i, word in enumerate(words):
            out[i] = self.token_vector(word)
        return out

    # ------------------------------------------------------------------ LSTM
    def zero_state(self) -> State:
        def direction():
            return [(np.zeros(self.proj_dim), np.zeros(self.cell_dim)) for _ in range(self.n_layers)]

        return (direction(), direction())

    def lstm_step(self, direction: int, layer: int, x: np.ndarray, h_prev: np.ndarray, c_prev: np.ndarray):
        """One TF LSTMCell(num_proj) step; returns (h, c) (h before any residual)."""
        w, b, w_p = self.lstm[direction][layer]
        z = np.concatenate([x, h_prev]) @ w + b
        i, j, f, o = np.split(z, 4)
        c = _sigmoid(f + 1.0) * c_prev + _sigmoid(i) * np.tanh(j)
        self.clip_stats["max_abs_cell"] = max(self.clip_stats["max_abs_cell"], float(np.abs(c).max()))
        c = _clip(c, self.cell_clip)
        h = (_sigmoid(o) * np.tanh(c)) @ w_p
        self.clip_stats["max_abs_proj"] = max(self.clip_stats["max_abs_proj"], float(np.abs(h).max()))
        h = _clip(h, self.proj_clip)
        return h, c

    def run_direction(self, direction: int, inputs: np.ndarray, state: list[tuple[np.ndarray, np.ndarray]]):
        """Run one stack over inputs (T, P) in the given order; returns (outputs per layer [(T, P)...], state)."""
        state = [(np.array(h, dtype=np.float64), np.array(c, dtype=np.float64)) for h, c in state]
        layer_outputs = []
        layer_input = inputs
        for layer in range(self.n_layers):
            h, c = state[layer]
            out = np.zeros((len(layer_input), self.proj_dim))
            for t in range(len(layer_input)):
                h, c = self.lstm_step(direction, layer, layer_input[t], h, c)
                out[t] = h
                if self.skip and layer >= 1:
                    out[t] = h + layer_input[t]
            state[layer] = (h, c)
            layer_outputs.append(out)
            layer_input = out
        return layer_outputs, state

    def run_sentence(self, words: list[str], state: State | None = None):
        """biLM layers of one sentence; markers are added here and removed from the outputs.

        Returns (layers, new_state): layers is a list of n_layers + 1 arrays (len(words), 2P).
        """
        if state is None:
            state = self.zero_state()
        tokens = self.token_layer([BOS_WORD, *words, EOS_WORD])  # (n + 2, P)
        fwd_layers, fwd_state = self.run_direction(0, tokens, state[0])
        bwd_rev, bwd_state = self.run_direction(1, tokens[::-1], state[1])
        bwd_layers = [out[::-1] for out in bwd_rev]
        n = len(words)
        layers = [np.concatenate([tokens[1 : n + 1], tokens[1 : n + 1]], axis=1)]
        for f_out, b_out in zip(fwd_layers, bwd_layers, strict=True):
            layers.append(np.concatenate([f_out[1 : n + 1], b_out[1 : n + 1]], axis=1))
        return layers, (fwd_state, bwd_state)
