//! The network half of the simulation: packets put on their route, moved from link to link,
//! dropped or delivered, watched for the trace and captures; and the [`Wire`] that carries out
//! a connection's actions.

use super::{Event, Net, Wire};
use crate::metrics::TraceKind;
use crate::net::{Fate, Header, Packet, PacketId};
use crate::time::SimTime;
use crate::transport::{Action, Sink};

impl Sink for Wire<'_> {
    #[inline]
    fn push(&mut self, a: Action) {
        let net = &mut *self.net;
        let (f, now) = (self.flow, net.now);
        match a {
            Action::Packet { sub, route, size, ref header } => net.send(f, sub, route, size, header),
            Action::Timer { sub, kind, at } => net.queue.push(at, Event::Timer { flow: f, sub, kind }),
            Action::Note { sub, kind, seq, dsn } => net.rec.trace(now, f, sub, kind, seq, dsn, 0, u32::MAX),
        }
    }
}

impl Net {
    /// Traces and captures a packet as it is sent (see `send`).
    #[inline(never)]
    pub(super) fn watch_send(&mut self, flow: u32, sub: u8, header: &Header) {
        let now = self.now;
        if self.rec.tracing() {
            let (kind, seq, dsn, len) = header.trace_send();
            self.rec.trace(now, flow, sub, kind, seq, dsn, len, u32::MAX);
        }
        if !self.pcap.is_empty() {
            self.pcap[flow as usize].sent(now, sub as usize, header);
        }
    }

    /// Puts a packet of flow `flow` on the first link of `route` (and on through cut-through
    /// links). The packet is written into the arena once, when the link accepts it, with the
    /// link's mark; a packet the first link drops never enters it.
    #[inline]
    pub(super) fn send(&mut self, flow: u32, sub: u8, route: u32, size: u32, header: &Header) {
        let now = self.now;
        if self.watched {
            self.watch_send(flow, sub, header);
        }
        let links = &self.routes[route as usize].links;
        let (link, next) = (links[0], links.get(1).copied());
        // asked before the first link is borrowed, which then stays borrowed to the end (a
        // route of one link, the common case, has no next link to look at)
        let next_cut_through = next.is_some_and(|n| self.links[n as usize].cut_through);
        let l = &mut self.links[link as usize];
        if l.is_managed() {
            let id = self.arena.alloc(Packet { flow, route, hop: 0, last: next.is_none(), sub, size, header: *header });
            return self.enqueue(id, link);
        }
        let t = match l.offer_at(now, now, size) {
            Fate::Arrives(t) => t,
            fate => {
                let (seq, dsn) = header.trace_ids();
                return self.rec.trace(now, flow, sub, drop_kind(fate), seq, dsn, size, link);
            }
        };
        let mut p = Packet { flow, route, hop: 0, last: next.is_none(), sub, size, header: *header };
        if l.marks_last() {
            p.header.set_cw();
        }
        // (see `forward_at`)
        if t <= self.end && next_cut_through {
            p.hop = 1;
            let id = self.arena.alloc(p);
            return self.forward_at(id, t);
        }
        let id = self.arena.alloc(p);
        if l.pipe.is_empty() {
            self.queue.push_frequent(t, Event::LinkHead(link));
        }
        l.pipe.push_back((t, id));
    }

    /// Offers packet `id` to the link of its current hop, and on through cut-through links.
    pub(super) fn forward(&mut self, id: PacketId) {
        self.forward_at(id, self.now);
    }

    /// Offers packet `id` to the link of its current hop at `at` (later than now for a
    /// cut-through link), and on through cut-through links.
    pub(super) fn forward_at(&mut self, id: PacketId, mut at: SimTime) {
        // the packet is read once and written once, when it leaves this loop: its hop is kept
        // here meanwhile (nothing reads it from the arena before then)
        let p = self.arena.get(id);
        let (size, route, mut hop) = (p.size, p.route as usize, p.hop as usize);
        loop {
            let links = &self.routes[route].links;
            let link = links[hop];
            let next = links.get(hop + 1).copied();
            // asked before the link is borrowed, as in `send`
            let next_cut_through = next.is_some_and(|n| self.links[n as usize].cut_through);
            let l = &mut self.links[link as usize];
            if l.is_managed() {
                // (never cut-through: `at` is now)
                let p = self.arena.get_mut(id);
                (p.hop, p.last) = (hop as u16, next.is_none());
                return self.enqueue(id, link);
            }
            let t = match l.offer_at(self.now, at, size) {
                Fate::Arrives(t) => t,
                fate => return self.drop_packet(id, fate, link, at),
            };
            let p = self.arena.get_mut(id);
            if l.marks_last() {
                p.header.set_cw();
            }
            // (a packet that would enter after the run ends waits in the pipe instead, so
            // link counters cover the run exactly; drops on a cut-through link are counted
            // when the packet leaves the previous link, up to one hop early)
            if t <= self.end && next_cut_through {
                hop += 1;
                at = t;
                continue;
            }
            (p.hop, p.last) = (hop as u16, next.is_none());
            if l.pipe.is_empty() {
                self.queue.push_frequent(t, Event::LinkHead(link));
            }
            l.pipe.push_back((t, id));
            return;
        }
    }

    /// Hands packet `id` to `link`, whose queue an AQM manages, and starts what the link can
    /// send now.
    #[cold]
    #[inline(never)]
    fn enqueue(&mut self, id: PacketId, link: u32) {
        let now = self.now;
        let p = self.arena.get(id);
        let (size, hash, ect) = (p.size, subflow_hash(p.flow, p.sub), p.header.ecn().capable());
        if let Some(fate) = self.links[link as usize].enqueue(now, id, size, hash, ect) {
            self.drop_packet(id, fate, link, now);
        }
        self.free_aqm_drops(link);
        self.serve(link);
    }

    /// A managed link's dequeue event.
    pub(super) fn on_dequeue(&mut self, link: u32) {
        if self.links[link as usize].dequeue_due() != Some(self.now) {
            // stale: the link went down since it was asked for
            return;
        }
        self.serve(link);
    }

    /// Starts every transmission managed link `link` can start now, and asks for an event
    /// at its next.
    fn serve(&mut self, link: u32) {
        let now = self.now;
        loop {
            let l = &mut self.links[link as usize];
            if l.dequeue_due() != Some(now) {
                match l.next_dequeue(now) {
                    None => return,
                    Some(t) if t > now => return self.queue.push(t, Event::LinkDequeue(link)),
                    Some(_) => {}
                }
            }
            let sent = l.dequeue(now);
            self.free_aqm_drops(link);
            match sent {
                Some((id, Fate::Arrives(t), marked)) => {
                    if marked {
                        self.arena.get_mut(id).header.set_ce();
                    }
                    let p = self.arena.get(id);
                    let next = self.routes[p.route as usize].links.get(p.hop as usize + 1).copied();
                    // on at once to a cut-through link, as `forward_at` does
                    if t <= self.end && next.is_some_and(|n| self.links[n as usize].cut_through) {
                        self.arena.get_mut(id).hop += 1;
                        self.forward_at(id, t);
                        continue;
                    }
                    let l = &mut self.links[link as usize];
                    if l.pipe.is_empty() {
                        self.queue.push_frequent(t, Event::LinkHead(link));
                    }
                    l.pipe.push_back((t, id));
                }
                Some((id, fate, _)) => self.drop_packet(id, fate, link, now),
                None => {}
            }
        }
    }

    /// Frees and traces the packets a managed link's discipline dropped.
    fn free_aqm_drops(&mut self, link: u32) {
        let now = self.now;
        let drops: Vec<PacketId> = self.links[link as usize].take_drops().collect();
        for id in drops {
            self.drop_packet(id, Fate::QueueDrop, link, now);
        }
    }

    pub(super) fn drop_packet(&mut self, id: PacketId, fate: Fate, link: u32, at: SimTime) {
        let p = *self.arena.get(id);
        let (seq, dsn) = p.header.trace_ids();
        self.arena.free(id);
        self.rec.trace(at, p.flow, p.sub, drop_kind(fate), seq, dsn, p.size, link);
    }
}

/// The flow an AQM sees a packet in: its connection and subflow (each subflow has a 5-tuple
/// of its own), folded into 32 bits (the discipline mixes it further).
fn subflow_hash(flow: u32, sub: u8) -> u32 {
    flow.wrapping_mul(0x9e37_79b9) ^ sub as u32
}

/// The trace kind of a packet a link did not accept.
fn drop_kind(fate: Fate) -> TraceKind {
    match fate {
        Fate::QueueDrop => TraceKind::QueueDrop,
        Fate::Lost => TraceKind::LossDrop,
        Fate::Down | Fate::Arrives(_) => TraceKind::DownDrop,
    }
}
