//! Single-path TCP: the sender and receiver halves of a connection, sans-IO, and the plain
//! TCP connection built from them.

pub mod conn;
pub mod defaults;
pub mod receiver;
pub mod rtt;
pub mod sender;

pub use conn::TcpConn;
pub use receiver::{Received, ReceiverConfig, ReceiverStats, TcpReceiver};
pub use rtt::RttEstimator;
pub use sender::{CaState, SenderConfig, SenderStats, TcpSender, TxSegment, DUP_THRESH};
