"""The same scenario on the real Linux kernel, side by side with the simulation.

:func:`compare` runs a scenario through the kernel's TCP and Multipath TCP in two network
namespaces joined by emulated paths, then in mpsim configured as the kernel is and as the file
stands, and returns them side by side (a :class:`KernelResult`; every ratio is mpsim / kernel);
``mpsim kernel SCENARIO`` does the same from the command line. :mod:`mpsim.kernel.testbed`
holds the testbed (namespaces, TUN devices, the link emulator, the endpoints);
:mod:`mpsim.kernel.result` the result, its tables, its JSON document and the stall rule;
:mod:`mpsim.kernel.report` writes the table of every scenario of
``scenarios/kernel/`` (``python -m mpsim.kernel.report``, ``make kernel-table``);
:mod:`mpsim.kernel.quic` runs a QUIC flow on a real Multipath QUIC implementation (noq)
instead of the kernel's TCP, in the same testbed.

>>> import mpsim
>>> side = mpsim.kernel.compare("scenario.toml", repeat=3)   # doctest: +SKIP
"""

from .testbed import KernelResult, KernelUnavailable, accuracy, available, compare, find_emulator, unmappable

__all__ = ["compare", "accuracy", "KernelResult", "KernelUnavailable", "available", "unmappable", "find_emulator"]
