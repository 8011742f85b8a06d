//! A Multipath TCP subflow: a TCP connection over one path ([`tcp::Subflow`]) and what the
//! connection level keeps of it: the DSS mappings of the chunks handed to it, its backup mark,
//! whether it has joined and whether a timeout marked it potentially failed, how far its data
//! was offered for reinjection, and the feedback stamp it echoes.

use super::{dsn_of, Mapping};
use crate::cc::SubflowState;
use crate::metrics::SubflowSummary;
use crate::time::SimTime;
use crate::transport::{tcp, Sink};
use crate::view::SubflowView;
use std::collections::VecDeque;

/// How many chunks a subflow is handed between two drops of its acknowledged mappings.
pub const MAPPINGS_DROPPED_AT_ONCE: usize = 64;

/// One subflow of a Multipath TCP connection.
pub struct Subflow {
    /// The TCP connection over the subflow's path.
    pub tcp: tcp::Subflow,
    /// A backup subflow (MP_PRIO): used only when no regular one can be.
    pub backup: bool,
    /// False from a timeout until new data is acknowledged (Linux's potentially-failed mark).
    pub usable: bool,
    /// Which DSN each chunk handed to this subflow carries, oldest first. Mappings of data
    /// acknowledged on the subflow are dropped in batches, not on every ACK: the front of the
    /// map may hold some (at most [`MAPPINGS_DROPPED_AT_ONCE`] and those still unacknowledged
    /// when the last batch was dropped); [`mappings`](Self::mappings) skips them.
    pub map: VecDeque<Mapping>,
    /// The map's length at which [`assign`](Self::assign) next drops acknowledged mappings.
    map_drop_at: usize,
    /// Everything below this subflow sequence was already offered for reinjection.
    pub reinjected_upto: u64,
    /// The stamp of the latest receiver feedback about this path, echoed on its segments.
    pub echo: SimTime,
    /// When the subflow joins the connection, and whether it has; before, it is neither
    /// scheduled nor coupled (`scenario::Join`).
    pub join_at: SimTime,
    pub joined: bool,
}

impl Subflow {
    /// The subflow over `tcp`'s path, joining at `join_at` (`joined`: already at the start).
    pub fn new(tcp: tcp::Subflow, backup: bool, join_at: SimTime, joined: bool) -> Subflow {
        Subflow {
            tcp,
            backup,
            usable: true,
            map: VecDeque::new(),
            map_drop_at: MAPPINGS_DROPPED_AT_ONCE,
            reinjected_upto: 0,
            echo: SimTime::ZERO,
            join_at,
            joined,
        }
    }

    /// The mappings of data not yet acknowledged on this subflow, oldest first (the map
    /// without the acknowledged ones not yet dropped at its front).
    pub fn mappings(&self) -> impl Iterator<Item = &Mapping> {
        let una = self.tcp.sender.snd_una();
        self.map.iter().skip_while(move |m| m.seq + m.len as u64 <= una)
    }

    /// What a scheduler sees of this subflow.
    pub fn view(&self) -> SubflowView {
        let w = self.tcp.sender.window();
        let rtt = self.tcp.sender.rtt();
        SubflowView {
            srtt: rtt.srtt(),
            latest_rtt: rtt.latest(),
            rtt_samples: rtt.samples(),
            rttvar: rtt.rttvar(),
            min_rtt: rtt.min_rtt(),
            rto: rtt.rto(),
            cwnd: w.cwnd,
            ssthresh: w.ssthresh,
            mss: w.mss,
            in_flight: self.tcp.sender.in_flight(),
            queued: self.tcp.sender.unsent(),
            ca_state: self.tcp.sender.state(),
            backup: self.backup,
            usable: self.usable && self.joined,
            segments_sent: self.tcp.sender.stats.segments_sent,
            retransmits: self.tcp.sender.stats.retransmits,
            pacing_rate: self.tcp.sender.pacing_rate(),
        }
    }

    /// Brings `v`, this subflow's view as it stood before an ACK, up to date after it, field
    /// by field: an ACK changes the RTT estimates and the RTO, the window and the congestion
    /// state, what is in flight, and whether the subflow is usable; not the MSS, the backup
    /// mark, the data queued or the segments sent (which [`update_view_on_transmit`]
    /// follows). Checked against a rebuilt view in debug builds.
    ///
    /// [`update_view_on_transmit`]: Self::update_view_on_transmit
    #[inline]
    pub fn update_view_on_ack(&self, v: &mut SubflowView) {
        let w = self.tcp.sender.window();
        let rtt = self.tcp.sender.rtt();
        v.srtt = rtt.srtt();
        v.latest_rtt = rtt.latest();
        v.rtt_samples = rtt.samples();
        v.rttvar = rtt.rttvar();
        v.min_rtt = rtt.min_rtt();
        v.rto = rtt.rto();
        v.cwnd = w.cwnd;
        v.ssthresh = w.ssthresh;
        v.in_flight = self.tcp.sender.in_flight();
        v.ca_state = self.tcp.sender.state();
        v.usable = self.usable && self.joined;
        v.pacing_rate = self.tcp.sender.pacing_rate();
        debug_assert_eq!(*v, self.view());
    }

    /// Brings `v`, this subflow's view as it stood before [`transmit`](Self::transmit), up to
    /// date after it: sending changes only what is in flight and queued and the counts of
    /// segments sent and retransmitted. Checked against a rebuilt view in debug builds.
    #[inline]
    pub fn update_view_on_transmit(&self, v: &mut SubflowView) {
        v.in_flight = self.tcp.sender.in_flight();
        v.queued = self.tcp.sender.unsent();
        v.segments_sent = self.tcp.sender.stats.segments_sent;
        v.retransmits = self.tcp.sender.stats.retransmits;
        debug_assert_eq!(*v, self.view());
    }

    /// What the coupled controllers see of this subflow: it takes part in the coupling while
    /// usable, joined and not a backup.
    pub fn state(&self) -> SubflowState {
        self.tcp.sender.subflow_state(self.usable && self.joined && !self.backup)
    }

    /// Brings `s`, this subflow's [`state`](Self::state) as it stood before an ACK, up to date
    /// after it: everything but the MSS may have changed. Checked against a rebuilt state in
    /// debug builds.
    #[inline]
    pub fn update_state_on_ack(&self, s: &mut SubflowState) {
        let w = self.tcp.sender.window();
        s.cwnd = w.cwnd;
        s.ssthresh = w.ssthresh;
        s.srtt = self.tcp.sender.rtt().srtt();
        s.active = self.usable && self.joined && !self.backup;
        s.in_recovery = self.tcp.sender.state().recovering();
        s.inter_loss_bytes = self.tcp.sender.inter_loss_bytes();
        debug_assert_eq!(*s, self.state());
    }

    /// Hands the chunk [dsn, dsn+len) to this subflow. (Inlined into the scheduling loop, as
    /// it was before the batch drop below made it larger.)
    #[inline]
    pub fn assign(&mut self, dsn: u64, len: u64) {
        let seq = self.tcp.sender.write_chunk(len);
        if self.map.len() >= self.map_drop_at {
            self.drop_acked_mappings();
        }
        self.map.push_back(Mapping { seq, dsn, len: len as u32 });
    }

    /// Drops the mappings of acknowledged data, and sets the length at which the next batch
    /// goes: [`MAPPINGS_DROPPED_AT_ONCE`] mappings later, so the drop costs the same per chunk
    /// whatever the window. (Dropping them on every ACK that moves `snd_una` cost about 40
    /// instructions per packet; nothing reads a mapping below `snd_una` but [`mappings`],
    /// which skips them, and the searches of [`dsn_of`], which look above it.)
    ///
    /// [`mappings`]: Self::mappings
    #[inline(never)]
    fn drop_acked_mappings(&mut self) {
        let una = self.tcp.sender.snd_una();
        let acked = self.map.partition_point(|m| m.seq + m.len as u64 <= una);
        self.map.drain(..acked);
        self.map_drop_at = self.map.len() + MAPPINGS_DROPPED_AT_ONCE;
    }

    /// Sends every segment the subflow's sender allows now, each carrying the DSN of its
    /// mapping (see [`tcp::Subflow::transmit`]).
    pub fn transmit(&mut self, now: SimTime, me: usize, header: u32, check: Option<u64>, tx: &mut impl Sink) {
        let map = &self.map;
        let dsn = |seq| dsn_of(map, seq).expect("every chunk handed to a subflow has a mapping");
        self.tcp.transmit(now, me, header, dsn, self.echo, check, tx);
    }

    /// The subflow's line of the flow summary, with its goodput computed by the caller.
    pub fn summary(&self, goodput_bps: f64) -> SubflowSummary {
        SubflowSummary { backup: self.backup, ..self.tcp.summary(goodput_bps) }
    }
}
