"""NewReno in Python: a port of the built-in ``reno`` (crates/mpsim-core/src/cc/reno.rs).
Slow start by bytes acknowledged (at most 2 MSS per ACK), +1 MSS per window of bytes
acknowledged in congestion avoidance; on loss ssthresh = max(in_flight / 2, 2 MSS), cwnd =
ssthresh after a fast retransmit, one MSS after a timeout."""


class Reno:
    def __init__(self):
        self.acked_in_ca = 0  # bytes acknowledged in congestion avoidance since the last increase

    def on_ack(self, w, ctx):
        if w.cwnd < w.ssthresh:
            w.cwnd += min(ctx.bytes_acked, 2 * w.mss)
            self.acked_in_ca = 0
        else:
            self.acked_in_ca += ctx.bytes_acked
            if self.acked_in_ca >= w.cwnd:
                self.acked_in_ca -= w.cwnd
                w.cwnd += w.mss
        return w

    def on_congestion(self, w, event, ctx):
        self.acked_in_ca = 0
        ssthresh = max(ctx.in_flight // 2, 2 * w.mss)
        w.cwnd = ssthresh if event == "fast_retransmit" else w.mss
        w.ssthresh = ssthresh
        return w
