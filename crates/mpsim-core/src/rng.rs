//! Seeded random numbers with one independent substream per component.
//!
//! The generator is xoshiro256** seeded through splitmix64. A component's stream is derived
//! from the scenario seed and a stable label (for example `"link/bottleneck/loss"`), so adding a
//! flow or a link never changes the draws of another component.

/// A small, fast, deterministic generator (xoshiro256**).
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a hash of a label: stable across platforms and Rust versions.
fn fnv1a(label: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in label.as_bytes() {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

impl Rng {
    pub fn from_seed(seed: u64) -> Rng {
        let mut st = seed;
        let s = [splitmix64(&mut st), splitmix64(&mut st), splitmix64(&mut st), splitmix64(&mut st)];
        Rng { s }
    }

    /// The substream of component `label` under scenario seed `seed`.
    pub fn substream(seed: u64, label: &str) -> Rng {
        let mut st = seed ^ fnv1a(label).rotate_left(17);
        // one extra round so that nearby seeds and labels decorrelate
        let mixed = splitmix64(&mut st) ^ fnv1a(label);
        Rng::from_seed(mixed)
    }

    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// True with probability `p`.
    pub fn bernoulli(&mut self, p: f64) -> bool {
        p > 0.0 && self.next_f64() < p
    }

    /// Uniform integer in [0, n).
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream() {
        let mut a = Rng::substream(7, "link/x/loss");
        let mut b = Rng::substream(7, "link/x/loss");
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

    #[test]
    fn labels_and_seeds_give_different_streams() {
        let a = Rng::substream(7, "link/x/loss").next_u64();
        let b = Rng::substream(7, "link/y/loss").next_u64();
        let c = Rng::substream(8, "link/x/loss").next_u64();
        assert_ne!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn bernoulli_rate_is_close() {
        let mut r = Rng::from_seed(1);
        let n = 200_000;
        let hits = (0..n).filter(|_| r.bernoulli(0.01)).count();
        let rate = hits as f64 / n as f64;
        assert!((rate - 0.01).abs() < 0.0015, "rate {rate}");
    }

    #[test]
    fn f64_in_unit_interval() {
        let mut r = Rng::from_seed(3);
        for _ in 0..10_000 {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x));
        }
    }
}
