"""Round-robin in Python: a port of the built-in ``round_robin``
(crates/mpsim-core/src/sched/round_robin.rs). Subflows take turns, one segment each,
skipping those without window room; backups only under the backup rule."""


class RoundRobin:
    def __init__(self):
        self.next = 0  # the subflow after the one served last

    def pick(self, ctx):
        subs = ctx.subflows
        n = len(subs)
        backups = ctx.backups_in_use()
        for k in range(n):
            i = (self.next + k) % n
            s = subs[i]
            if s.available() and s.eligible(backups):
                self.next = (i + 1) % n
                return i
        return None  # wait for an ACK
