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

#[cfg(test)]
mod tests {
    use crate::net::{Fate, LossModel};
    use crate::scenario::{Scenario, ScenarioError};
    use crate::time::{Dur, SimTime};
    use std::path::Path;

    fn scenario(link: &str, dir: Option<&Path>) -> Result<Scenario, ScenarioError> {
        let text = format!(
            "duration = \"10s\"\n[[link]]\nname = \"wifi\"\ndelay = \"10ms\"\n{link}\n[[path]]\nname = \"p\"\nlinks = [\"wifi\"]\n[[flow]]\npath = \"p\"\n"
        );
        Scenario::from_toml_in(&text, "s.toml", dir)
    }

    fn err(link: &str) -> ScenarioError {
        scenario(link, None).unwrap_err()
    }

    #[test]
    fn inline_steps_give_rate_and_delay_to_both_directions_and_loss_forward() {
        let s = scenario(
            "schedule = [{ at = \"0s\", rate = \"10Mbps\" }, { at = \"5s\", rate = \"2Mbps\", delay = \"80ms\", loss = \"1%\" }]",
            None,
        )
        .unwrap();
        let l = &s.links[0];
        // no `rate`: the schedule's rate at 0 stands for it; the figure is the mean over the run
        assert_eq!((l.rate_bps, l.reverse_rate_bps), (6_000_000, 6_000_000));
        assert_eq!(l.schedule.as_ref().map(|s| s.steps().len()), Some(2));
        for forward in [true, false] {
            let mut link = l.link(forward, 1);
            assert_eq!(link.offer(SimTime::ZERO, 1250), Fate::Arrives(SimTime(11_000_000)), "10 Mbit/s and 10 ms at first");
            let t = SimTime(6_000_000_000);
            assert_eq!(link.offer(t, 1250), Fate::Arrives(t + Dur::from_millis(5 + 80)), "2 Mbit/s and 80 ms from 5 s");
        }
        // the loss steps set the forward direction's loss rate only
        let mut fwd = l.link(true, 1);
        let mut rev = l.link(false, 1);
        let t = |k: u64| SimTime(5_000_000_000 + k * 10_000_000);
        let lost = |link: &mut crate::net::Link| (0..5000).filter(|&k| link.offer(t(k), 100) == Fate::Lost).count();
        let (f, r) = (lost(&mut fwd), lost(&mut rev));
        assert!((25..=80).contains(&f) && r == 0, "forward {f}, reverse {r}");
    }

    #[test]
    fn before_the_first_step_the_links_own_keys_hold() {
        let s = scenario("rate = \"10Mbps\"\nloss = \"50%\"\nschedule = [{ at = \"2s\", rate = \"5Mbps\" }]", None).unwrap();
        let l = &s.links[0];
        assert_eq!(l.rate_bps, 6_000_000, "(2 s × 10 + 8 s × 5) / 10 s");
        assert_eq!(l.loss, LossModel::Uniform { p: 0.5 });
        let mut link = l.link(true, 1);
        let lost = (0..1000u64).filter(|&k| link.offer(SimTime(k * 1_000_000), 100) == Fate::Lost).count();
        assert!((430..=570).contains(&lost), "the link's 50% until the first step: {lost}");
        // a schedule of delays only keeps the link's rate and its gilbert loss
        let s = scenario(
            "rate = \"10Mbps\"\nloss = { model = \"gilbert\", mean = \"1%\", burst = 2 }\nschedule = [{ at = \"1s\", delay = \"50ms\" }]",
            None,
        )
        .unwrap();
        assert_eq!(s.links[0].rate_bps, 10_000_000);
        assert!(matches!(s.links[0].loss, LossModel::GilbertElliott { .. }));
    }

    #[test]
    fn a_schedule_file_is_read_relative_to_the_scenario() {
        let d = std::env::temp_dir().join(format!("mpsim-link-schedule-{}", std::process::id()));
        std::fs::create_dir_all(d.join("sched")).unwrap();
        std::fs::write(d.join("sched/wifi.csv"), "at,rate,delay\n0s,20Mbps,\n4s,4Mbps,40ms\n").unwrap();
        let s = scenario("schedule = \"sched/wifi.csv\"", Some(&d)).unwrap();
        let l = &s.links[0];
        assert_eq!(l.schedule.as_ref().and_then(|s| s.file.as_deref()), Some("sched/wifi.csv"));
        assert_eq!(l.rate_bps, (4 * 20 + 6 * 4) * 1_000_000 / 10);
        let e = scenario("schedule = \"sched/none.csv\"", Some(&d)).unwrap_err();
        assert_eq!(e.to_string(), "s.toml: link[0].schedule: sched/none.csv: cannot read the file: no such file");
        std::fs::write(d.join("sched/bad.csv"), "at,rate\n0s,20Mbps\n1s,fast\n").unwrap();
        let e = scenario("schedule = \"sched/bad.csv\"", Some(&d)).unwrap_err();
        assert_eq!(e.to_string(), "s.toml: link[0].schedule: sched/bad.csv: line 3, column rate: no number (got 'fast')");
        std::fs::write(d.join("sched/t"), "1\n2\n").unwrap();
        let e = scenario("rate = \"1Mbps\"\ntrace = \"sched/t\"\nschedule = [{ at = \"1s\", delay = \"2ms\" }]", Some(&d)).unwrap_err();
        assert_eq!(e.key, "link[0].schedule");
        assert!(e.message.starts_with("a link follows a trace or a schedule, not both"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn bad_schedules_are_refused_naming_the_step() {
        let e = err("rate = \"1Mbps\"\nschedule = [{ at = \"2s\", rate = \"1Mbps\" }, { at = \"1s\", rate = \"2Mbps\" }]");
        assert_eq!(e.key, "link[0].schedule[1]");
        assert!(e.message.contains("not after the step before"), "{e}");
        let e = err("rate = \"1Mbps\"\nschedule = [{ at = \"2s\", speed = \"1Mbps\" }]");
        assert_eq!(e.key, "link[0].schedule[0].speed");
        assert!(e.message.contains("expected one of: at, rate, delay, loss"), "{e}");
        let e = err("rate = \"1Mbps\"\nschedule = [{ rate = \"1Mbps\" }]");
        assert_eq!((e.key.as_str(), e.message.as_str()), ("link[0].schedule[0].at", "missing"));
        let e = err("rate = \"1Mbps\"\nschedule = [{ at = \"1s\", delay = \"-5ms\" }]");
        assert_eq!(e.key, "link[0].schedule[0].delay");
        assert!(e.message.contains("must not be negative"), "{e}");
        let e = err("rate = \"1Mbps\"\nschedule = [{ at = \"1s\", rate = 0 }]");
        assert!(e.message.starts_with("the last rate given is 0"), "{e}");
        let e = err("rate = \"1Mbps\"\nschedule = []");
        assert_eq!((e.key.as_str(), e.message.as_str()), ("link[0].schedule", "has no step; give at least one"));
        let e = err("rate = \"1Mbps\"\nschedule = 5");
        assert!(e.message.starts_with("expected a schedule file name or a list of steps"), "{e}");
        // the rate before a first step after 0 is `rate`, which is then required
        let e = err("schedule = [{ at = \"1s\", rate = \"1Mbps\" }]");
        assert_eq!((e.key.as_str(), e.message.as_str()), ("link[0].rate", "missing"));
        let e =
            err("rate = \"1Mbps\"\nloss = { model = \"gilbert\", mean = \"1%\", burst = 2 }\nschedule = [{ at = \"1s\", loss = \"2%\" }]");
        assert!(e.message.contains("loss steps set a uniform loss rate"), "{e}");
    }
}
