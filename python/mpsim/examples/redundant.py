"""Redundant in Python: a port of the built-in ``redundant``
(crates/mpsim-core/src/sched/redundant.rs): each chunk on the lowest-RTT subflow, a copy on
every other usable regular subflow (``copies`` returns them as a bit mask)."""

from .lowest_rtt import LowestRtt


class Redundant(LowestRtt):
    def copies(self, ctx, chosen):
        mask = 0
        for i, s in enumerate(ctx.subflows[:64]):
            if i != chosen and s.usable and not s.backup:
                mask |= 1 << i
        return mask
