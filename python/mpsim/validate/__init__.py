"""Report generators that check the model against formulas, other transports and itself.

Each module runs its scenarios, writes a Markdown report and is run as a program (the
``make`` target in brackets writes the committed report under ``docs/reports/``):

* :mod:`mpsim.validate.tcp`: single-path TCP against the Padhye and Mathis formulas, a
  loss-free link and fairness (``python -m mpsim.validate.tcp``, ``make validate``);
* :mod:`mpsim.validate.mptcp`: RFC 6356's goals for coupled congestion control and
  receive-buffer blocking (``python -m mpsim.validate.mptcp``, ``make validate``);
* :mod:`mpsim.validate.mptcp_rec`: MPTCP-rec's rate estimate against NewReno and beside LIA
  (``python -m mpsim.validate.mptcp_rec``, ``make validate``);
* :mod:`mpsim.validate.sctp`: SCTP against the formulas and TCP, failover, CMT, receive-buffer
  blocking (``python -m mpsim.validate.sctp``, ``make sctp-validate``);
* :mod:`mpsim.validate.tcp_fidelity`: loss-free Reno, LIA and OLIA on long deep-buffered paths
  against the sawtooth model (``python -m mpsim.validate.tcp_fidelity``, ``make tcp-fidelity``);
* :mod:`mpsim.validate.westwood_new_jersey`: Westwood+ and TCP New Jersey beside Reno
  (``python -m mpsim.validate.westwood_new_jersey``, ``make westwood-nj``).

Nothing is imported here: ``import mpsim`` does not load the generators.
"""
