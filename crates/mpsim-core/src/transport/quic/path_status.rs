//! Multipath QUIC's path status during a run (draft-ietf-quic-multipath-21 §3.3): at the
//! times `quic.path_status` gives, a path becomes a backup path or available. The connection
//! applies the new status to its own scheduling at once (the backup rule, `conn.rs`) and tells
//! the peer with a PATH_STATUS_BACKUP or PATH_STATUS_AVAILABLE frame carrying the path
//! identifier and the path's next status sequence number (a backup path's first frame, beside
//! its PATH_CHALLENGE, took 0). The frame goes in an ack-eliciting packet of its own, beyond
//! the window as a probe, on the path it is about if that path is in use, else on the first
//! path in use (regular before backup), as PATH_ABANDON does.

use super::conn::{QuicConn, QuicPath};
use super::wire;
use crate::scenario::PathStatusChange;
use crate::time::SimTime;
use crate::transport::{Action, Sink, TimerKind};
use serde_json::json;

/// The status changes of a connection's paths: those to come, those applied.
#[derive(Clone, Debug, Default)]
pub struct PathStatus {
    /// The changes the scenario gives, in time order.
    changes: Vec<PathStatusChange>,
    /// Their timers were asked for.
    armed: bool,
    /// Per path, the next status sequence number.
    next_seq: Vec<u64>,
    /// Applied changes whose frame is still to be sent: (path, backup, sequence number).
    pending: Vec<(usize, bool, u64)>,
    /// Changes applied: (time, path, backup), for the summary.
    pub applied: Vec<(SimTime, usize, bool)>,
}

impl PathStatus {
    /// The changes of `paths`; a path that starts as a backup announces itself with sequence
    /// number 0 beside its PATH_CHALLENGE, so its next is 1.
    pub fn new(changes: &[PathStatusChange], paths: &[QuicPath]) -> PathStatus {
        PathStatus { changes: changes.to_vec(), next_seq: paths.iter().map(|p| p.backup as u64).collect(), ..Default::default() }
    }

    /// Whether the scenario changes any status (the summary reports them only then).
    pub fn any(&self) -> bool {
        !self.changes.is_empty()
    }
}

impl QuicConn {
    /// Asks, once (at the connection's first sending, `now`), for a timer at each status
    /// change; a change before the flow's start applies at its start.
    pub(crate) fn arm_path_status(&mut self, now: SimTime, tx: &mut impl Sink) {
        if self.status.armed {
            return;
        }
        self.status.armed = true;
        for (i, c) in self.status.changes.iter().enumerate() {
            tx.push(Action::Timer { sub: i as u16, kind: TimerKind::PathStatus, at: c.at.max(now) });
        }
    }

    /// Status change `i` is due: the path takes its new status (an abandoned path, or one
    /// with that status already, stays as it is) and the frame is queued.
    pub(crate) fn on_path_status(&mut self, now: SimTime, i: usize, tx: &mut impl Sink) {
        let Some(&PathStatusChange { path, backup, .. }) = self.status.changes.get(i) else { return };
        let p = &mut self.paths[path];
        if p.abandoned_at.is_some() || p.backup == backup {
            return;
        }
        p.backup = backup;
        let seq = self.status.next_seq[path];
        self.status.next_seq[path] += 1;
        self.status.pending.push((path, backup, seq));
        self.status.applied.push((now, path, backup));
        self.poll_transmit(now, tx);
    }

    /// Sends the queued status frames, each on its own path if in use, else on the first
    /// path in use, a regular one before a backup (kept queued while none is).
    pub(crate) fn send_path_status(&mut self, now: SimTime, tx: &mut impl Sink) {
        let mut k = 0;
        while k < self.status.pending.len() {
            let (path, backup, seq) = self.status.pending[k];
            let on = if self.paths[path].active() {
                Some(path)
            } else {
                (0..self.paths.len()).filter(|&j| self.paths[j].active()).min_by_key(|&j| self.paths[j].backup)
            };
            let Some(j) = on else {
                k += 1;
                continue;
            };
            self.status.pending.remove(k);
            self.send_status_frame(now, j, path, backup, seq, tx);
        }
    }

    fn send_status_frame(&mut self, now: SimTime, on: usize, path: usize, backup: bool, seq: u64, tx: &mut impl Sink) {
        let kind = if backup { "path_status_backup" } else { "path_status_available" };
        let frame = json!({"frame_type": kind, "path_id": path, "sequence_number": seq});
        self.send_control_frame(now, on, wire::path_status_frame(path as u64, seq), frame, tx);
    }
}
