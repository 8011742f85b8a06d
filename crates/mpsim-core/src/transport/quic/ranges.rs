//! A set of half-open integer ranges, kept merged: the packet numbers a receiver got, the
//! stream bytes it holds, the stream bytes the sender knows acknowledged.
//!
//! Kept as a sorted vector: the sets hold a few ranges and nearly every insertion extends the
//! highest one, which is then a check and a store (a tree paid a search and a node update
//! for it).

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// (start, end), ascending, disjoint and not touching.
    ranges: Vec<(u64, u64)>,
}

impl RangeSet {
    /// Index of the first range ending at or after `v` (the one holding or touching `v`, or the
    /// first one above it).
    fn first_reaching(&self, v: u64) -> usize {
        self.ranges.partition_point(|&(_, e)| e < v)
    }

    /// Index of the range holding `v`, if one does.
    fn holding(&self, v: u64) -> Option<usize> {
        let i = self.ranges.partition_point(|&(_, e)| e <= v);
        (i < self.ranges.len() && self.ranges[i].0 <= v).then_some(i)
    }

    /// Adds [start, end); returns how many of its values were new.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        // the common case: at or past the end of the highest range
        match self.ranges.last_mut() {
            None => {
                self.ranges.push((start, end));
                return end - start;
            }
            Some(last) if start > last.1 => {
                self.ranges.push((start, end));
                return end - start;
            }
            Some(last) if start >= last.0 => {
                let new = end.saturating_sub(last.1);
                last.1 = last.1.max(end);
                return new;
            }
            _ => {}
        }
        // ranges [i, j) touch or overlap [start, end): they merge into one
        let i = self.first_reaching(start);
        let j = i + self.ranges[i..].partition_point(|&(s, _)| s <= end);
        if i == j {
            self.ranges.insert(i, (start, end));
            return end - start;
        }
        let covered: u64 = self.ranges[i..j].iter().map(|&(s, e)| e.min(end).saturating_sub(s.max(start))).sum();
        let merged = (self.ranges[i].0.min(start), self.ranges[j - 1].1.max(end));
        self.ranges[i] = merged;
        self.ranges.drain(i + 1..j);
        (end - start) - covered
    }

    pub fn contains(&self, v: u64) -> bool {
        self.holding(v).is_some()
    }

    /// The end of the range that holds `from` (`from` itself if none does): the prefix
    /// held without a gap.
    pub fn contiguous_from(&self, from: u64) -> u64 {
        self.holding(from).map_or(from, |i| self.ranges[i].1)
    }

    /// The first part of [start, end) not in the set.
    pub fn first_gap(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        let s = self.contiguous_from(start);
        if s >= end {
            return None;
        }
        // `s` is held by no range: the next one starts above it
        let i = self.ranges.partition_point(|&(a, _)| a <= s);
        let next = self.ranges.get(i).map_or(end, |&(a, _)| a.min(end));
        Some((s, next))
    }

    /// The ranges, highest first, as inclusive (low, high) pairs.
    pub fn descending(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().rev().map(|&(s, e)| (s, e - 1))
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Drops the lowest ranges until `keep` remain.
    pub fn keep_highest(&mut self, keep: usize) {
        let drop = self.ranges.len().saturating_sub(keep);
        self.ranges.drain(..drop);
    }

    /// Values held at or above `from`.
    pub fn count_from(&self, from: u64) -> u64 {
        self.ranges.iter().map(|&(s, e)| e.saturating_sub(s.max(from))).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inserts_merge_and_count_new_values() {
        let mut r = RangeSet::default();
        assert_eq!(r.insert(10, 20), 10);
        assert_eq!(r.insert(30, 40), 10);
        assert_eq!(r.insert(15, 35), 10);
        assert_eq!(r.descending().collect::<Vec<_>>(), vec![(10, 39)]);
        assert_eq!(r.insert(40, 41), 1);
        assert_eq!(r.insert(0, 5), 5);
        assert_eq!(r.insert(0, 50), 50 - 5 - 31);
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn gaps_and_prefixes() {
        let mut r = RangeSet::default();
        r.insert(0, 10);
        r.insert(20, 30);
        assert_eq!(r.contiguous_from(0), 10);
        assert_eq!(r.contiguous_from(10), 10);
        assert_eq!(r.first_gap(0, 40), Some((10, 20)));
        assert_eq!(r.first_gap(20, 30), None);
        assert_eq!(r.first_gap(25, 40), Some((30, 40)));
        assert!(r.contains(9) && !r.contains(10) && r.contains(20));
        assert_eq!(r.count_from(5), 15);
        r.keep_highest(1);
        assert_eq!(r.descending().collect::<Vec<_>>(), vec![(20, 29)]);
    }

    /// The same operations on a plain set of values.
    mod against_a_plain_set {
        use super::*;
        use proptest::prelude::*;
        use std::collections::BTreeSet;

        fn runs(set: &BTreeSet<u64>) -> Vec<(u64, u64)> {
            let mut out: Vec<(u64, u64)> = Vec::new();
            for &v in set {
                match out.last_mut() {
                    Some(last) if last.1 + 1 == v => last.1 = v,
                    _ => out.push((v, v)),
                }
            }
            out.reverse();
            out
        }

        proptest! {
            #[test]
            fn every_operation_agrees(ops in proptest::collection::vec((0u64..120, 0u64..25, 0u8..4), 1..60)) {
                let mut r = RangeSet::default();
                let mut plain = BTreeSet::new();
                for (a, len, what) in ops {
                    let (s, e) = (a, a + len);
                    if what == 3 && !plain.is_empty() {
                        let keep = (len as usize) % 4;
                        r.keep_highest(keep);
                        let mut rs = runs(&plain);
                        rs.truncate(keep);
                        plain = rs.iter().flat_map(|&(lo, hi)| lo..=hi).collect();
                    } else {
                        let new = (s..e).filter(|v| !plain.contains(v)).count() as u64;
                        prop_assert_eq!(r.insert(s, e), new);
                        plain.extend(s..e);
                    }
                    prop_assert_eq!(r.descending().collect::<Vec<_>>(), runs(&plain));
                    prop_assert_eq!(r.len(), runs(&plain).len());
                    prop_assert_eq!(r.contains(a), plain.contains(&a));
                    let mut c = a;
                    while plain.contains(&c) { c += 1; }
                    prop_assert_eq!(r.contiguous_from(a), c);
                    let gap = (s..e.max(s)).find(|v| !plain.contains(v)).map(|g| {
                        let mut n = g;
                        while n < e && !plain.contains(&n) { n += 1; }
                        (g, n)
                    });
                    prop_assert_eq!(r.first_gap(s, e), gap);
                    prop_assert_eq!(r.count_from(a), plain.range(a..).count() as u64);
                }
            }
        }
    }
}
