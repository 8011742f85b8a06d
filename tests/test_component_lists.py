"""The report generators and reproductions name schedulers and controllers in lists of their
own; each name must be one the core's tables know (mpsim list), of the right kind, so that a
renamed or removed component fails here rather than deep inside a report run."""

from __future__ import annotations

import importlib

import pytest

import mpsim

# (module, attribute, kind of component, how to get the names out of the value)
LISTS = [
    ("mpsim.validate.mptcp", "CONTROLLERS", "cc", None),
    ("mpsim.validate.mptcp", "SCHEDULERS", "scheduler", None),
    ("mpsim.validate.tcp_fidelity", "CONTROLLERS", "cc", None),
    ("mpsim.validate.westwood_new_jersey", "CONTROLLERS", "cc", None),
    ("mpsim.validate.westwood_new_jersey", "VARIANTS", "cc", lambda v: [cc for cc, _ in v]),
    ("mpsim.reproduce.dqs", "SCHEDULERS", "scheduler", None),
    ("mpsim.reproduce.po_mptcp", "SCHEDULERS", "scheduler", None),
    ("mpsim.reproduce.po_mptcp", "QUEUE_TABLE", "scheduler", None),
    ("mpsim.reproduce.po_mptcp", "COMPARISONS", "scheduler", lambda v: [n for a, b, _ in v for n in (a, b)]),
    ("mpsim.reproduce.po_mptcp", "FIFO", "scheduler", lambda v: [n for kv in v.items() for n in kv]),
    ("mpsim.reproduce.jsctp", "SCTP_CCS", "sctp_cc", lambda v: [cc for _, cc in v]),
    ("mpsim.reproduce.jsctp", "TCP_CCS", "cc", lambda v: [cc for _, cc in v]),
    ("mpsim.kernel.testbed", "KERNEL_CCS", "cc", None),
]


@pytest.mark.parametrize("module,attr,kind,names", LISTS, ids=[f"{m}.{a}" for m, a, _, _ in LISTS])
def test_every_listed_component_is_a_built_in_one(module, attr, kind, names):
    value = getattr(importlib.import_module(module), attr)
    listed = names(value) if names else list(value)
    known = {n for _, n, _ in mpsim.components(kind)}
    assert listed and not set(listed) - known, f"{module}.{attr}: {sorted(set(listed) - known)} not among the {kind} components"


def test_a_wrong_name_is_caught(monkeypatch):
    # the check itself: a list holding a name the tables do not have fails it
    import mpsim.reproduce.dqs as dqs

    monkeypatch.setattr(dqs, "SCHEDULERS", ("lowest_rtt", "no_such_scheduler"))
    with pytest.raises(AssertionError, match="no_such_scheduler"):
        test_every_listed_component_is_a_built_in_one("mpsim.reproduce.dqs", "SCHEDULERS", "scheduler", None)
