"""models -- one file per network: its parameters (a dataclass of named arrays), forward, backward, train.

``rnn`` (+ ``gradcheck``) the seed's Elman RNN, ``fast_rnn`` its fast CPU training step, ``softmax_rnn`` the
stacked softmax RNN of chapter 07, ``linear_rnn`` (GILR-LSTM, SRU, QRNN), ``lstm``, ``gru``, ``charlm`` and
``lstm_lm`` (character language models). Every ``train*`` returns a :class:`course_lib.core.results.TrainResult`.
Imports only from ``core``, ``data`` and ``algorithms``.
"""
