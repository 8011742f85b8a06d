//! The event loop: takes the next event, advances the clock and lets the flow, link or
//! recorder it concerns act on it.

use super::record::Output;
use super::{Event, Simulation, Wire, PROGRESS_STEPS};
use crate::app::App;
use crate::metrics::TraceKind;
use crate::net::Header;
use crate::transport::Arrival;
use std::time::Instant;

impl Simulation {
    /// Runs to the end.
    pub fn run(self) -> Output {
        self.run_with_progress(|_| true)
    }

    /// Runs to the end, calling `progress(fraction_done)` at every thousandth of the simulated
    /// duration; if it returns false the run stops early (the summary then covers the time
    /// simulated so far).
    ///
    /// # Panics
    ///
    /// If the scenario names a scheduler, controller or receiver logic written outside this
    /// crate ("module:Class") that was not installed with `with_scheduler`,
    /// `with_controller` or `with_receiver_logic` ([`pending_components`]).
    ///
    /// [`pending_components`]: Simulation::pending_components
    pub fn run_with_progress(mut self, mut progress: impl FnMut(f64) -> bool) -> Output {
        if let Some((flow, kind, name)) = self.pending.first() {
            panic!("flow '{flow}' names {kind} '{name}', written outside mpsim: install it before the run (Simulation::with_*)");
        }
        let wall = Instant::now();
        let mut stopped = false;
        // progress at every thousandth of the simulated time, whatever the event rate
        let step = (self.net.end.0 / PROGRESS_STEPS).max(1);
        let mut next_report = step;
        while let Some((t, ev)) = self.net.queue.pop_until(self.net.end) {
            self.net.now = t;
            // a packet reaching the head of a link is most events: it goes straight to its
            // handler, the rest through `dispatch` (kept out of line, so the loop stays small)
            match ev {
                Event::LinkHead(l) => self.on_link_head(l),
                ev => self.dispatch(ev),
            }
            if t.0 < next_report {
                continue;
            }
            next_report = (t.0 / step + 1) * step;
            if !progress(t.0 as f64 / self.net.end.0 as f64) {
                self.net.end = self.net.now;
                stopped = true;
                break;
            }
        }
        if !stopped {
            progress(1.0);
        }
        self.net.now = self.net.end;
        let events = self.net.queue.events_processed();
        let pcap = std::mem::take(&mut self.net.pcap);
        let mut out = self.net.rec.finish(&self.flows, &self.net.links, self.net.end, self.warmup, events, wall.elapsed().as_secs_f64());
        out.pcap = pcap.into_iter().zip(&self.flows).map(|(c, f)| c.into_file(f.name.clone())).collect();
        out.qlog = self.flows.iter_mut().filter_map(|f| Some((f.name.clone(), f.conn.take_qlog()?))).collect();
        out
    }

    /// Handles one event (the run loop hands a link's head to `on_link_head` directly).
    #[inline(never)]
    pub(super) fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::LinkHead(l) => self.on_link_head(l),
            Event::Timer { flow, sub, kind } => {
                let f = flow as usize;
                let wire = &mut Wire { net: &mut self.net, flow };
                self.flows[f].conn.on_timer(wire.net.now, sub as usize, kind, wire);
            }
            Event::LinkDequeue(l) => self.net.on_dequeue(l),
            Event::AppTick(f) => self.on_app_tick(f as usize),
            Event::FlowStart(f) => self.on_flow_start(f as usize),
            Event::FlowStop(f) => self.flows[f as usize].active = false,
            Event::LinkDown(l) => {
                let now = self.net.now;
                for dir in [2 * l, 2 * l + 1] {
                    for id in self.net.links[dir as usize].set_down(now) {
                        let p = *self.net.arena.get(id);
                        self.net.arena.free(id);
                        self.net.rec.trace(now, p.flow, p.sub, TraceKind::DownDrop, 0, 0, p.size, dir);
                    }
                }
            }
            Event::LinkUp(l) => {
                self.net.links[2 * l as usize].set_up();
                self.net.links[2 * l as usize + 1].set_up();
            }
            Event::Warmup => self.net.rec.mark_warmup(self.net.now, &self.flows),
            Event::Sample => {
                self.net.rec.sample(self.net.now, &mut self.flows, &mut self.net.links);
                if let Some(iv) = self.net.rec.interval() {
                    let next = self.net.now + iv;
                    if next <= self.net.end {
                        self.net.queue.push(next, Event::Sample);
                    }
                }
            }
        }
    }

    fn on_link_head(&mut self, link: u32) {
        let l = &mut self.net.links[link as usize];
        let Some((t, id)) = l.pipe.pop_front() else { return };
        if t != self.net.now {
            // a stale event, left behind by a link that went down and came back
            l.pipe.push_front((t, id));
            return;
        }
        if let Some(&(next, _)) = l.pipe.front() {
            self.net.queue.push_frequent(next, Event::LinkHead(link));
        }
        let p = self.net.arena.get_mut(id);
        if !p.last {
            p.hop += 1;
            self.net.forward(id);
            return;
        }
        let (flow, sub) = (p.flow as usize, p.sub as usize);
        let header = p.header;
        self.net.arena.free(id);
        self.on_arrival(flow, sub, &header);
    }

    // ----- flows -----

    fn on_flow_start(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        fl.active = true;
        match fl.app {
            App::Bulk { .. } => fl.refill(self.net.now),
            App::Paced(_) => self.net.queue.push(self.net.now, Event::AppTick(f as u32)),
        }
        self.send_data(f);
    }

    fn on_app_tick(&mut self, f: usize) {
        let now = self.net.now;
        let fl = &mut self.flows[f];
        if !fl.active {
            return;
        }
        let (write, next) = fl.app.tick(now);
        if let Some(next) = next {
            self.net.queue.push(next, Event::AppTick(f as u32));
        }
        let Some(w) = write else { return };
        fl.paced_write(now, w.len, w.priority, w.class);
        self.send_data(f);
    }

    /// A packet reached the end of its route: the connection takes it, the application gets
    /// what it delivers, and an ACK may free room to send more.
    fn on_arrival(&mut self, f: usize, sub: usize, header: &Header) {
        let now = self.net.now;
        // a packet brings its receiver data or frees room at its sender, never both nor
        // neither (`Header::frees_room`): one look at the header answers both, and the data's
        // ids and length are read only for a trace
        let frees_room = header.frees_room();
        debug_assert_eq!(frees_room, header.data().is_none());
        if !frees_room {
            self.net.rec.packets_delivered += 1;
            if self.net.rec.tracing() {
                if let Some((seq, dsn, len)) = header.data() {
                    self.net.rec.trace(now, f as u32, sub as u8, TraceKind::Recv, seq, dsn, len, u32::MAX);
                }
            }
        }
        // (the flow and the network are distinct fields: the flow is looked up once)
        let fl = &mut self.flows[f];
        if !self.net.pcap.is_empty() {
            fl.conn.capture_arrival(&mut self.net.pcap[f], now, sub, header);
        }
        match fl.conn.on_packet(now, sub, header, &mut Wire { net: &mut self.net, flow: f as u32 }) {
            Arrival::Stream { upto } => fl.app_delivered(now, upto),
            Arrival::Message { end } => {
                fl.message_delivered(now, end);
                while let Some(end) = fl.conn.take_message() {
                    fl.message_delivered(now, end);
                }
            }
            Arrival::Datagram { sent_at } => fl.datagram_delivered(now, sent_at),
            Arrival::Nothing => {}
        }
        if frees_room {
            if !self.net.pcap.is_empty() {
                // a finite transfer acknowledged in full: the sender closes
                fl.conn.capture_close(&mut self.net.pcap[f], now, header, fl.total);
            }
            if fl.refills() {
                fl.refill(now);
            }
            fl.conn.poll_transmit(now, &mut Wire { net: &mut self.net, flow: f as u32 });
        }
    }

    /// Lets flow `f`'s connection send what its windows allow.
    fn send_data(&mut self, f: usize) {
        let now = self.net.now;
        self.flows[f].conn.poll_transmit(now, &mut Wire { net: &mut self.net, flow: f as u32 });
    }
}
