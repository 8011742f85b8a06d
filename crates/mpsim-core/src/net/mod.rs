//! The network: links, loss models, packets, and routes through links.

pub mod aqm;
pub mod link;
pub mod link_schedule;
pub mod link_trace;
pub mod loss;
pub mod packet;

pub use aqm::AqmSpec;
pub use link::{CongestionWarning, Fate, Link, LinkStats, QueueLimit};
pub use link_schedule::{LinkSchedule, ScheduleCursor, Step};
pub use link_trace::{LinkTrace, TraceError, OPPORTUNITY_BYTES};
pub use loss::{LossModel, LossProcess};
pub use packet::{
    AckHeader, DataHeader, Ecn, Feedback, Header, Packet, PacketArena, PacketId, QuicHeader, SackBlock, SctpControlHeader, SctpDataHeader,
    SctpSackHeader, MAX_SACK_BLOCKS,
};

/// Index of a link in the simulation.
pub type LinkId = u32;

/// A route: the links a packet crosses in order.
#[derive(Clone, Debug)]
pub struct Route {
    pub links: Vec<LinkId>,
}

impl Route {
    /// One-way delay of a `header`-byte packet along the route without queueing: propagation
    /// plus transmission on every link.
    pub fn one_way(&self, links: &[Link], header: u32) -> crate::time::Dur {
        self.links
            .iter()
            .map(|&l| {
                let l = &links[l as usize];
                l.delay + crate::time::Dur::tx_time(header as u64, l.rate_bps)
            })
            .fold(crate::time::Dur::ZERO, |a, b| a + b)
    }
}

/// Round-trip time of a connection's handshake on a path (routes `fwd` and `rev`):
/// propagation both ways plus the transmission of a header-sized packet on every link, the
/// first RTT sample real TCP takes.
pub fn handshake_rtt(links: &[Link], fwd: &Route, rev: &Route, header: u32) -> crate::time::Dur {
    fwd.one_way(links, header) + rev.one_way(links, header)
}
