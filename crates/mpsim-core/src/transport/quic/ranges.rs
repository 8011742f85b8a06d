//! A set of half-open integer ranges, kept merged: the packet numbers a receiver got, the
//! stream bytes it holds, the stream bytes the sender knows acknowledged.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start -> end, disjoint and not touching.
    map: BTreeMap<u64, u64>,
}

impl RangeSet {
    /// Adds [start, end); returns how many of its values were new.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let (mut s, mut e) = (start, end);
        let mut covered = 0;
        // the range starting at or before `start` that reaches it
        if let Some((&ps, &pe)) = self.map.range(..=start).next_back() {
            if pe >= start {
                covered += pe.min(end) - start;
                s = ps;
                e = e.max(pe);
                self.map.remove(&ps);
            }
        }
        // ranges starting inside (start, end]
        let inside: Vec<(u64, u64)> = self.map.range(start..=end).map(|(&a, &b)| (a, b)).collect();
        for (a, b) in inside {
            covered += b.min(end) - a.min(end);
            e = e.max(b);
            self.map.remove(&a);
        }
        self.map.insert(s, e);
        (end - start) - covered
    }

    pub fn contains(&self, v: u64) -> bool {
        self.map.range(..=v).next_back().is_some_and(|(_, &e)| v < e)
    }

    /// The end of the range that starts at `from` (`from` itself if none does): the prefix
    /// held without a gap.
    pub fn contiguous_from(&self, from: u64) -> u64 {
        match self.map.range(..=from).next_back() {
            Some((_, &e)) if e > from => e,
            _ => from,
        }
    }

    /// The first part of [start, end) not in the set.
    pub fn first_gap(&self, start: u64, end: u64) -> Option<(u64, u64)> {
        let mut s = start;
        while s < end {
            match self.map.range(..=s).next_back() {
                Some((_, &e)) if e > s => s = e,
                _ => {
                    let next = self.map.range(s..).next().map_or(end, |(&a, _)| a.min(end));
                    return Some((s, next));
                }
            }
        }
        None
    }

    /// The ranges, highest first, as inclusive (low, high) pairs.
    pub fn descending(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.map.iter().rev().map(|(&s, &e)| (s, e - 1))
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Drops the lowest ranges until `keep` remain.
    pub fn keep_highest(&mut self, keep: usize) {
        while self.map.len() > keep {
            self.map.pop_first();
        }
    }

    /// Values held at or above `from`.
    pub fn count_from(&self, from: u64) -> u64 {
        self.map.iter().map(|(&s, &e)| e.saturating_sub(s.max(from))).sum()
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
}
