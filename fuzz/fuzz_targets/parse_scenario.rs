//! The scenario parser on arbitrary bytes: TOML, JSON and every unit reader. Nothing may
//! panic (arithmetic overflow included: fuzz builds keep debug assertions), and whatever
//! parses must be estimable.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mpsim_core::scenario::units;
use mpsim_core::Scenario;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let parsed = match data.first() {
        Some(b'{') => Scenario::from_json(text, "fuzz.json"),
        _ => Scenario::from_toml(text, "fuzz.toml"),
    };
    match parsed {
        Ok(s) => {
            let e = s.estimate();
            assert!(e.memory_bytes >= e.state_bytes);
        }
        Err(e) => {
            assert!(!e.message.is_empty());
            let _ = e.to_string();
        }
    }
    // every quantity reader on the raw text, and on each line of it
    for s in std::iter::once(text).chain(text.lines().take(16)) {
        let _ = units::rate(s);
        let _ = units::duration(s);
        let _ = units::bytes(s);
        let _ = units::fraction(s);
        let _ = units::fraction_any(s);
        let _ = units::queue(s);
    }
});
