"""models -- one file per network: its parameters (a dataclass of named arrays), forward, backward, train.

``rnn`` (+ ``gradcheck``) the seed's Elman RNN, ``fast_rnn`` its fast CPU training step, ``softmax_rnn`` the
stacked softmax RNN of chapter 07, ``linear_rnn`` (GILR-LSTM, SRU, QRNN), ``lstm``, ``gru``, ``charlm`` and
``lstm_lm`` (character language models), ``diag_gru`` (a GRU with a diagonal Jacobian, for parallel Newton). Every params dataclass follows :class:`course_lib.core.params.Params`
(``names()``, ``arrays()``, ``copy()``, ``astype()``, ``zeros_like()``, ``nx``, ``nh``, ``dtype``); every backward
returns its gradients as that same class (input gradients as separate return values), and every ``train*``
runs ``Adam(params.arrays())`` / ``opt.step(grads.arrays())`` and returns a :class:`course_lib.core.results.TrainResult`.
Imports only from ``core``, ``data`` and ``algorithms``.
"""
