//! Replays the kept corpus of the scenario-reader fuzz target (fuzz/corpus/parse_scenario)
//! in the ordinary test suite, so an input that once crashed the reader stays covered
//! without cargo fuzz: every file must be read, or refused with a message, without a panic,
//! and whatever is read must be estimable.

use mpsim_core::{units, Scenario};
use std::path::Path;

#[test]
fn every_corpus_input_is_read_or_refused_without_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/parse_scenario");
    let mut n = 0;
    let mut valid = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        let Ok(text) = std::str::from_utf8(&data) else { continue };
        n += 1;
        let parsed = match data.first() {
            Some(b'{') => Scenario::from_json(text, "corpus.json"),
            _ => Scenario::from_toml(text, "corpus.toml"),
        };
        match parsed {
            Ok(s) => {
                valid += 1;
                let e = s.estimate();
                assert!(e.memory_bytes >= e.state_bytes);
            }
            Err(e) => assert!(!e.message.is_empty()),
        }
        for s in std::iter::once(text).chain(text.lines().take(16)) {
            let _ = (units::rate(s), units::duration(s), units::bytes(s), units::queue(s).is_ok());
            let _ = (units::fraction(s), units::fraction_any(s));
        }
    }
    assert!(n >= 16, "the corpus holds only {n} inputs");
    assert!(valid >= 16, "only {valid} of {n} corpus inputs are valid scenarios");
}
