//! Random loss models applied to packets crossing a link.

use crate::rng::Rng;

/// How a link loses packets, independently of its queue.
#[derive(Clone, Debug, PartialEq)]
pub enum LossModel {
    None,
    /// Each packet lost independently with probability `p` (Bernoulli).
    Uniform {
        p: f64,
    },
    /// Two-state Gilbert-Elliott chain evaluated per packet (ALGORITHMS.md §10.1):
    /// P(G->B) = p, P(B->G) = r, loss probability 1-k in G and 1-h in B.
    GilbertElliott {
        p: f64,
        r: f64,
        k: f64,
        h: f64,
    },
    /// Drop exactly the packets with these 0-based indices (counted over packets offered to
    /// the link in the forward direction). For tests.
    Scripted {
        drops: Vec<u64>,
    },
}

impl LossModel {
    /// Mean loss rate of the model in steady state.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::None | LossModel::Scripted { .. } => 0.0,
            LossModel::Uniform { p } => p,
            LossModel::GilbertElliott { p, r, k, h } => {
                if p + r == 0.0 {
                    return 1.0 - k;
                }
                let pb = p / (p + r);
                (1.0 - pb) * (1.0 - k) + pb * (1.0 - h)
            }
        }
    }
}

/// A loss model with its running state and its own random stream.
#[derive(Clone, Debug)]
pub struct LossProcess {
    model: LossModel,
    rng: Rng,
    bad: bool,
    offered: u64,
    next_scripted: usize,
}

impl LossProcess {
    pub fn new(model: LossModel, rng: Rng) -> LossProcess {
        let mut model = model;
        if let LossModel::Scripted { drops } = &mut model {
            drops.sort_unstable();
            drops.dedup();
        }
        LossProcess { model, rng, bad: false, offered: 0, next_scripted: 0 }
    }

    pub fn model(&self) -> &LossModel {
        &self.model
    }

    /// Switches to independent losses at rate `p` (none at 0), keeping the random stream: a
    /// scheduled link's loss steps (`link_schedule.rs`).
    pub fn set_uniform(&mut self, p: f64) {
        self.model = if p > 0.0 { LossModel::Uniform { p } } else { LossModel::None };
    }

    /// Decides the fate of the next packet: true if it is lost. A link without losses (the
    /// reverse direction of most) or with independent losses decides without a call.
    #[inline]
    pub fn lose_next(&mut self) -> bool {
        match self.model {
            LossModel::None => {
                self.offered += 1;
                false
            }
            LossModel::Uniform { p } => {
                self.offered += 1;
                self.rng.bernoulli(p)
            }
            _ => self.draw(),
        }
    }

    fn draw(&mut self) -> bool {
        let idx = self.offered;
        self.offered += 1;
        match &self.model {
            LossModel::None => false,
            LossModel::Uniform { p } => self.rng.bernoulli(*p),
            LossModel::GilbertElliott { p, r, k, h } => {
                // transition first, then draw the loss in the new state
                let (p, r, k, h) = (*p, *r, *k, *h);
                if self.bad {
                    if self.rng.bernoulli(r) {
                        self.bad = false;
                    }
                } else if self.rng.bernoulli(p) {
                    self.bad = true;
                }
                let keep = if self.bad { h } else { k };
                self.rng.bernoulli(1.0 - keep)
            }
            LossModel::Scripted { drops } => {
                if drops.get(self.next_scripted) == Some(&idx) {
                    self.next_scripted += 1;
                    true
                } else {
                    false
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measure(model: LossModel, n: usize) -> (f64, f64) {
        let mut lp = LossProcess::new(model, Rng::from_seed(11));
        let mut lost = 0usize;
        let mut bursts = 0usize;
        let mut prev = false;
        for _ in 0..n {
            let l = lp.lose_next();
            if l {
                lost += 1;
                if !prev {
                    bursts += 1;
                }
            }
            prev = l;
        }
        (lost as f64 / n as f64, lost as f64 / bursts.max(1) as f64)
    }

    #[test]
    fn uniform_hits_its_rate() {
        let (rate, _) = measure(LossModel::Uniform { p: 0.02 }, 500_000);
        assert!((rate - 0.02).abs() < 0.001, "{rate}");
    }

    #[test]
    fn simple_gilbert_matches_mean_and_burst_length() {
        // target 1% mean loss, mean burst 4 packets: r = 1/4, p = l*r/(1-l)
        let r = 0.25;
        let p = 0.01 * r / 0.99;
        let m = LossModel::GilbertElliott { p, r, k: 1.0, h: 0.0 };
        assert!((m.mean_loss() - 0.01).abs() < 1e-12);
        let (rate, burst) = measure(m, 2_000_000);
        assert!((rate - 0.01).abs() < 0.001, "rate {rate}");
        assert!((burst - 4.0).abs() < 0.3, "burst {burst}");
    }

    #[test]
    fn scripted_drops_exactly_the_listed_packets() {
        let mut lp = LossProcess::new(LossModel::Scripted { drops: vec![3, 1, 3] }, Rng::from_seed(0));
        let got: Vec<bool> = (0..5).map(|_| lp.lose_next()).collect();
        assert_eq!(got, vec![false, true, false, true, false]);
    }
}
