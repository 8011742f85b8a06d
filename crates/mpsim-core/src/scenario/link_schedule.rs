//! Reading a link's `schedule`: a CSV file of steps or an inline list (net/link_schedule.rs
//! applies them; docs/links.md).

use super::reader::{join, kind, Reader, Table};
use super::units;
use super::ScenarioError;
use crate::net::link_schedule::{LinkSchedule, Step, MAX_SCHEDULE_STEPS, SCHEDULE_COLUMNS};
use crate::net::LossModel;
use crate::time::Dur;
use std::sync::Arc;

impl Reader<'_> {
    /// `schedule = "FILE"` (relative to the scenario's folder) or
    /// `schedule = [{ at = "0s", rate = "10Mbps" }, { at = "5s", rate = "2Mbps", delay = "80ms" }]`.
    pub(super) fn link_schedule(&self, t: &Table) -> Result<Option<LinkSchedule>, ScenarioError> {
        let Some(v) = t.map.get("schedule") else { return Ok(None) };
        let key = join(&t.path, "schedule");
        if let Some(name) = v.as_str() {
            if name.is_empty() {
                return Err(self.e(&key, "expected a schedule file name or a list of steps, found an empty string"));
            }
            let path = match self.dir {
                Some(d) => d.join(name),
                None => std::path::PathBuf::from(name),
            };
            return LinkSchedule::read(&path, name).map(Some).map_err(|m| self.e(&key, format!("{name}: {m}")));
        }
        let arr = v.as_array().ok_or_else(|| {
            self.e(
                &key,
                format!("expected a schedule file name or a list of steps like [{{ at = \"5s\", rate = \"2Mbps\" }}], found {}", kind(v)),
            )
        })?;
        self.at_most(arr.len(), MAX_SCHEDULE_STEPS, &key, "steps")?;
        let mut steps: Vec<Step> = Vec::new();
        for (j, sv) in arr.iter().enumerate() {
            let skey = format!("{key}[{j}]");
            let st = self.table(sv, &skey, &SCHEDULE_COLUMNS)?;
            let step = Step {
                at: self.req(&st, "at", units::duration)?,
                rate_bps: self.opt(&st, "rate", units::rate)?,
                delay: self.opt(&st, "delay", units::duration)?,
                loss: self.opt(&st, "loss", units::fraction)?,
            };
            step.check(steps.last()).map_err(|m| self.e(&skey, m))?;
            steps.push(step);
        }
        LinkSchedule::new(None, steps).map(Some).map_err(|m| self.e(&key, m))
    }

    /// What a schedule may be combined with: not a trace (a link follows one or the other),
    /// and loss steps only over a uniform loss rate or none (`loss` as a Gilbert-Elliott or
    /// scripted model has no single rate to switch).
    pub(super) fn check_link_schedule(&self, t: &Table, s: &LinkSchedule, loss: &LossModel) -> Result<(), ScenarioError> {
        let key = join(&t.path, "schedule");
        if t.map.contains_key("trace") || t.map.contains_key("reverse_trace") {
            return Err(self.e(&key, "a link follows a trace or a schedule, not both; remove trace/reverse_trace or the schedule"));
        }
        if s.has_loss() && !matches!(loss, LossModel::None | LossModel::Uniform { .. }) {
            return Err(self.e(
                &key,
                "loss steps set a uniform loss rate, but the link's `loss` is a model (gilbert, scripted); give `loss` as a rate or drop the loss steps",
            ));
        }
        Ok(())
    }
}

/// The schedule's rate at time 0, which stands for a missing `rate` key.
pub(super) fn rate_at_zero(s: Option<&LinkSchedule>) -> Option<u64> {
    s.and_then(|s| s.steps().first()).filter(|st| st.at == Dur::ZERO).and_then(|st| st.rate_bps)
}

/// The schedule as the link's spec keeps it: its rate from time 0 made explicit (`rate`, the
/// link's own rate before the first step) when it has rate steps.
pub(super) fn with_start_rate(s: LinkSchedule, rate_bps: u64) -> Arc<LinkSchedule> {
    Arc::new(if s.has_rate() { s.with_rate_at_zero(rate_bps) } else { s })
}
