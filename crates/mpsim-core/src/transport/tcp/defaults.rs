//! TCP defaults, in one place: a scenario's `[tcp]` table and the sender's and receiver's
//! own defaults all start from these values.

use crate::time::Dur;

/// Maximum segment size: an Ethernet MTU less 40 bytes of IPv4 and TCP headers.
pub const MSS: u32 = 1460;
/// Initial window in segments (RFC 6928, Linux).
pub const INITIAL_WINDOW: u32 = 10;
/// The RTO's floor and cap depend on the timer mode: see `rto::RtoMode`.
pub const INITIAL_RTO: Dur = Dur::from_secs(1);
/// Linux's TCP_DELACK_MIN.
pub const DELACK_TIMEOUT: Dur = Dur::from_millis(40);
/// Receive and send buffers, in bytes.
pub const RCV_BUF: u64 = 4_000_000;
pub const SND_BUF: u64 = 4_000_000;
/// IPv4 + TCP header bytes on every packet.
pub const HEADER: u32 = 40;
