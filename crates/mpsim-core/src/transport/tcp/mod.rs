//! Single-path TCP: the sender and receiver halves of a connection, sans-IO, and the plain
//! TCP connection built from them.

pub mod config;
pub mod conn;
pub mod defaults;
pub mod delack;
pub mod frto;
pub mod prr;
pub mod rack;
pub mod rate;
pub mod receiver;
pub mod rto;
pub mod rtt;
pub mod sender;
pub mod subflow;
pub mod tlp;

pub use config::{SndBufAccounting, TcpConfig};
pub use conn::TcpConn;
pub use delack::DelayedAck;
pub use receiver::{Received, ReceiverConfig, ReceiverStats, TcpReceiver};
pub use rto::{RtoEstimator, RtoMode, RTO_MODES};
pub use rtt::RttEstimator;
pub use sender::{CaState, SenderConfig, SenderStats, TcpSender, TimerEvent, TxSegment, DUP_THRESH};
pub use subflow::{gso_segments, PathRoutes, Subflow, FEEDBACK_BYTES, MIN_TSO_SEGS};
