"""Lowest-RTT first with the receive-buffer optimisation, in Python: a port of the built-in
``lowest_rtt`` (crates/mpsim-core/src/sched/lowest_rtt.rs). When the receive window blocks
new data, ``on_window_blocked`` retransmits the head-of-line data on the fast subflow
(opportunistic retransmission) and halves the window of the slower subflow holding it
(penalisation), at most once per RTT of the fast subflow."""

from .lowest_rtt import LowestRtt


class LowestRttRbuf(LowestRtt):
    def __init__(self):
        self.last_penalty = None  # time of the last penalisation, ns

    def on_window_blocked(self, ctx):
        fast, hol = self.pick(ctx), ctx.hol_subflow
        if fast is None or hol is None or fast == hol:
            return None
        f, h = ctx.subflows[fast], ctx.subflows[hol]
        fast_rtt, hol_rtt = f.srtt_or_max(), h.srtt_or_max()
        reinject_on = penalize = None
        already = ctx.hol_sent_on & (1 << min(fast, 63)) != 0
        if not already and (h.cwnd <= 4 * h.mss or hol_rtt // 4 > fast_rtt):
            reinject_on = fast
        due = self.last_penalty is None or ctx.now - self.last_penalty >= fast_rtt
        if due and h.ca_state == "open" and hol_rtt > fast_rtt:
            penalize = hol
            self.last_penalty = ctx.now
        return reinject_on, penalize


