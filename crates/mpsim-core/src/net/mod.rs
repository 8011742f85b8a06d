//! The network: links, loss models, packets, and routes through links.

pub mod link;
pub mod loss;
pub mod packet;

pub use link::{CongestionWarning, Fate, Link, LinkStats, QueueLimit};
pub use loss::{LossModel, LossProcess};
pub use packet::{
    AckHeader, DataHeader, Feedback, Header, Packet, PacketArena, PacketId, SackBlock, SctpControlHeader, SctpDataHeader, SctpSackHeader,
    MAX_SACK_BLOCKS,
};

/// Index of a link in the simulation.
pub type LinkId = u32;

/// A route: the links a packet crosses in order.
#[derive(Clone, Debug)]
pub struct Route {
    pub links: Vec<LinkId>,
}
