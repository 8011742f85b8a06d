"""Lowest-RTT first in Python: a port of the built-in ``lowest_rtt_plain``
(crates/mpsim-core/src/sched/lowest_rtt.rs without the receive-buffer optimisation): the
available subflow with the smallest smoothed RTT, unsampled subflows last, ties to the
lower index."""

NO_SAMPLE = 2**64 - 1  # srtt_or_max() of a subflow without an RTT sample


class LowestRtt:
    def pick(self, ctx):
        backups = ctx.backups_in_use()
        best, best_rtt = None, NO_SAMPLE
        for i, s in enumerate(ctx.subflows):
            # available() first: when every window is full (about half the calls) the
            # answer is known sooner
            if s.available() and s.eligible(backups):
                rtt = s.srtt
                if rtt is None:
                    rtt = NO_SAMPLE
                if best is None or rtt < best_rtt:
                    best, best_rtt = i, rtt
        return best
