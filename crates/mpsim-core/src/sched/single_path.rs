//! Single path: everything on the first subflow. Plain TCP inside the multipath model, the
//! baseline the multipath schedulers are compared with.

use super::{Decision, SchedContext, Scheduler};

#[derive(Clone, Copy, Debug, Default)]
pub struct SinglePath;

impl Scheduler for SinglePath {
    fn name(&self) -> &'static str {
        "single_path"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        match ctx.subflows.first() {
            Some(s) if s.usable && s.has_cwnd_room() => Decision::Send(0),
            _ => Decision::Wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    #[test]
    fn only_the_first_subflow() {
        let subs = [sf(100, 10, 0), sf(10, 10, 0)];
        assert_eq!(SinglePath.pick(&ctx(&subs)), Decision::Send(0));
        let subs = [sf(100, 10, 10), sf(10, 10, 0)];
        assert_eq!(SinglePath.pick(&ctx(&subs)), Decision::Wait);
    }
}
