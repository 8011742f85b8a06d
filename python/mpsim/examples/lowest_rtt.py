"""Lowest-RTT first in Python: a port of the built-in ``lowest_rtt_plain``
(crates/mpsim-core/src/sched/lowest_rtt.rs without the receive-buffer optimisation): the
available subflow with the smallest smoothed RTT, unsampled subflows last, ties to the
lower index."""

NO_SAMPLE = 2**64 - 1  # srtt_or_max() of a subflow without an RTT sample


class LowestRtt:
    def pick(self, ctx):
        backups = ctx.backups_in_use()
        best, best_rtt = None, None
        for i, s in enumerate(ctx.subflows):
            if s.eligible(backups) and s.available():
                rtt = NO_SAMPLE if s.srtt is None else s.srtt
                if best is None or rtt < best_rtt:
                    best, best_rtt = i, rtt
        return best
