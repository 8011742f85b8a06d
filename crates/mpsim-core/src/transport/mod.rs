//! Transport protocols.

pub mod mptcp;
pub mod tcp;
