//! Applications: what writes data into a flow's send buffer.

use crate::scenario::AppSpec;
use crate::time::Dur;

#[derive(Clone, Debug)]
pub enum App {
    /// Keeps the send buffer full until `remaining` bytes are written (`None`: forever).
    Bulk { remaining: Option<u64> },
    /// Writes `packet` bytes every `interval`.
    Cbr { interval: Dur, packet: u32 },
}

impl App {
    pub fn from_spec(spec: &AppSpec) -> App {
        match *spec {
            AppSpec::Bulk { bytes } => App::Bulk { remaining: bytes },
            AppSpec::Cbr { rate_bps, packet } => App::Cbr { interval: Dur::tx_time(packet as u64, rate_bps), packet },
        }
    }

    /// Bytes a bulk application writes when the send buffer has `space` bytes free. It writes
    /// whole segments (so the sender never has to send a runt in the middle of a transfer),
    /// except for the tail of a finite transfer.
    pub fn bulk_write(&mut self, space: u64, mss: u64) -> u64 {
        let whole = space - space % mss;
        match self {
            App::Bulk { remaining: None } => whole,
            App::Bulk { remaining: Some(r) } => {
                let n = if *r <= space { *r } else { whole };
                *r -= n;
                n
            }
            App::Cbr { .. } => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finite_bulk_stops_at_its_size() {
        let mut a = App::from_spec(&AppSpec::Bulk { bytes: Some(5000) });
        assert_eq!(a.bulk_write(3500, 1000), 3000);
        assert_eq!(a.bulk_write(1500, 1000), 1000);
        assert_eq!(a.bulk_write(1500, 1000), 1000);
        assert_eq!(a.bulk_write(1500, 1000), 0);
        let mut u = App::from_spec(&AppSpec::Bulk { bytes: None });
        assert_eq!(u.bulk_write(999, 1000), 0);
        assert_eq!(u.bulk_write(4_000_000, 1460), 3_998_940);
    }

    #[test]
    fn cbr_interval_matches_rate() {
        let a = App::from_spec(&AppSpec::Cbr { rate_bps: 1_000_000, packet: 1250 });
        assert!(matches!(a, App::Cbr { interval, .. } if interval == Dur::from_millis(10)));
    }
}
