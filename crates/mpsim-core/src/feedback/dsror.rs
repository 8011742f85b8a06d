//! MPTCP-rec's DSRor (seed 000): the receiver runs one TCP emulation ([`Tear`]) per path and
//! tells the sender each path's desired sending rate on an extended ACK.

use super::tear::{Tear, TearConfig};
use super::{ReceiverLogic, RxSetup};
use crate::net::{DataHeader, Feedback};
use crate::time::{Dur, SimTime};

/// MPTCP-rec's DSRor: one [`Tear`] emulation per path; the extended NR-SACK (stamp, path id,
/// smoothed DSR) goes on the ACK that follows the end of a round timer or a rate mismatch.
pub struct Dsror {
    paths: Vec<Tear>,
    /// Feedback is due on the next ACK of the path.
    due: Vec<bool>,
}

impl Dsror {
    /// The logic of a connection set up as `s`.
    pub fn from_setup(s: &RxSetup) -> Dsror {
        Dsror::new(&s.tear, s.mss, &s.rtts)
    }

    /// One emulation per path, each seeded with that path's handshake RTT.
    pub fn new(cfg: &TearConfig, mss: u32, rtts: &[Dur]) -> Dsror {
        Dsror { paths: rtts.iter().map(|&r| Tear::new(cfg.clone(), mss, r)).collect(), due: vec![false; rtts.len()] }
    }

    pub fn path(&self, i: usize) -> &Tear {
        &self.paths[i]
    }

    pub fn paths(&self) -> &[Tear] {
        &self.paths
    }
}

impl ReceiverLogic for Dsror {
    fn name(&self) -> &'static str {
        "mptcp_rec"
    }

    fn on_data(&mut self, now: SimTime, path: usize, seg: &DataHeader) -> bool {
        let Some(t) = self.paths.get_mut(path) else { return false };
        t.on_packet(now, seg.seq, seg.len, seg.echo);
        let due = t.take_feedback_due();
        self.due[path] |= due;
        due
    }

    /// Only the ACK that follows a round timer or a rate mismatch is extended; the others
    /// are plain (cumulative ACK, SACK blocks, DATA_ACK and window).
    fn feedback(&mut self, now: SimTime, path: usize) -> Option<Feedback> {
        let t = self.paths.get(path)?;
        std::mem::take(&mut self.due[path]).then(|| Feedback { stamp: now, path: path as u8, rate_bps: t.advertised() })
    }

    fn deadline(&self, path: usize) -> Option<SimTime> {
        self.paths.get(path)?.deadline()
    }

    fn on_window(&mut self, now: SimTime, room: u64) {
        for t in &mut self.paths {
            t.on_window(now, room);
        }
    }

    fn on_timer(&mut self, now: SimTime, path: usize) -> bool {
        let Some(t) = self.paths.get_mut(path) else { return false };
        t.on_timer(now);
        let due = t.take_feedback_due();
        self.due[path] |= due;
        due
    }
}
