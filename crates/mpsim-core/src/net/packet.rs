//! Packets and the arena that holds them while they cross the network.
//!
//! Events carry a `PacketId`, never a packet, so the hot path moves 4-byte ids and reuses
//! slots instead of allocating.

use crate::time::SimTime;

pub type PacketId = u32;

/// A SACK block: the half-open byte range [start, end) held out of order by the receiver.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// Most SACK blocks an ACK carries (RFC 2018 allows 3 with timestamps, 4 without).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A TCP segment: data (`len > 0`) or a pure ACK.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpHeader {
    /// First data byte carried (data segments).
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Cumulative acknowledgement: next byte expected (ACKs).
    pub ack: u64,
    /// Advertised receive window in bytes (ACKs).
    pub wnd: u64,
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub n_sack: u8,
    /// True if this data segment is a retransmission.
    pub retx: bool,
    /// When the sender put the segment on the wire (data), or echoes it (ACKs).
    pub sent_at: SimTime,
}

impl TcpHeader {
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.n_sack as usize]
    }
}

/// Protocol headers. One link and queue model serves every protocol.
#[derive(Clone, Copy, Debug)]
pub enum Header {
    /// Data segment from a flow's sender to its receiver.
    TcpData(TcpHeader),
    /// ACK from a flow's receiver to its sender.
    TcpAck(TcpHeader),
}

#[derive(Clone, Copy, Debug)]
pub struct Packet {
    /// Index of the flow the packet belongs to.
    pub flow: u32,
    /// Route the packet follows and the hop it is on.
    pub route: u32,
    pub hop: u16,
    /// Bytes on the wire, headers included.
    pub size: u32,
    pub header: Header,
}

/// Slot arena with a free list.
#[derive(Default)]
pub struct PacketArena {
    slots: Vec<Packet>,
    free: Vec<PacketId>,
}

impl PacketArena {
    pub fn alloc(&mut self, p: Packet) -> PacketId {
        if let Some(id) = self.free.pop() {
            self.slots[id as usize] = p;
            id
        } else {
            self.slots.push(p);
            (self.slots.len() - 1) as PacketId
        }
    }

    pub fn free(&mut self, id: PacketId) {
        self.free.push(id);
    }

    pub fn get(&self, id: PacketId) -> &Packet {
        &self.slots[id as usize]
    }

    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        &mut self.slots[id as usize]
    }

    /// Packets currently alive (allocated and not freed).
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}
