"""Schedulers and congestion controllers written in Python: ports of built-in ones, line for
line, to start from. Each is usable in a scenario as ``"mpsim.examples.<file>:<Class>"``,
e.g. ``scheduler = "mpsim.examples.round_robin:RoundRobin"``; the tests check that each
gives the same summary as the built-in it ports (tests/test_plugins.py).
"""
