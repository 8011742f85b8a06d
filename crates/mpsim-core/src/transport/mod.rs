//! Transport protocols.

pub mod tcp;
