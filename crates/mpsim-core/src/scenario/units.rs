//! Parsing of quantities written as strings with units: "10Mbps", "20ms", "45KB", "1%".
//!
//! Every quantity is read the same way: a decimal number, optionally in scientific notation
//! ("1.5e9", "2E-3"), then a unit. Bare numbers are accepted in the base unit (bit/s,
//! seconds, bytes, packets, fraction). Byte prefixes are decimal (KB = 1000 B) unless written
//! as KiB/MiB/GiB/TiB. Each kind of quantity has a ceiling (the `MAX_*` constants below); a
//! value above it is refused with the limit in the message, never saturated or wrapped.

use crate::time::Dur;

/// The largest rate accepted anywhere: 1 Tbit/s.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000;
/// The longest duration accepted anywhere: 1,000,000 s (about 11.6 days). Simulated time
/// is counted in nanoseconds in a u64, so sums of such durations can never overflow.
pub const MAX_DURATION: Dur = Dur(1_000_000 * 1_000_000_000);
/// The largest size accepted anywhere: 1 PB (10^15 bytes).
pub const MAX_BYTES: u64 = 1_000_000_000_000_000;
/// The largest queue accepted, in packets.
pub const MAX_QUEUE_PACKETS: u64 = 10_000_000;

/// Splits "12.5 Mbps" into (12.5, "mbps"): number, then the unit in lower case.
fn split(s: &str) -> Result<(f64, String), String> {
    let s = s.trim();
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    let digits_from = i;
    while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
        i += 1;
    }
    if !b[digits_from..i].iter().any(u8::is_ascii_digit) {
        return Err("no number".into());
    }
    // an exponent only if digits follow the 'e' (so a unit may start with 'e' some day)
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'+' || b[j] == b'-') {
            j += 1;
        }
        if j < b.len() && b[j].is_ascii_digit() {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            i = j;
        }
    }
    let (num, unit) = s.split_at(i);
    let v: f64 = num.parse().map_err(|_| format!("'{num}' is not a number"))?;
    if !v.is_finite() {
        return Err(format!("'{num}' is too large to be a number"));
    }
    Ok((v, unit.trim().to_ascii_lowercase()))
}

fn non_negative(v: f64, what: &str) -> Result<f64, String> {
    if v < 0.0 {
        Err(format!("{what} must not be negative"))
    } else {
        Ok(v)
    }
}

/// Converts `v` (already in the base unit) to an integer, refusing values above `max`.
fn at_most(v: f64, max: u64, limit: &str) -> Result<u64, String> {
    let r = v.round();
    #[allow(clippy::neg_cmp_op_on_partial_ord)] // NaN must fail too
    if !(r <= max as f64) {
        return Err(format!("must be at most {limit}"));
    }
    Ok(r as u64)
}

/// A rate in bit/s: "10Mbps", "384kbps", "1.5Gbit/s", "1e9", or a number of bit/s; at most
/// [`MAX_RATE_BPS`].
pub fn rate(s: &str) -> Result<u64, String> {
    let (v, unit) = split(s)?;
    let v = non_negative(v, "a rate")?;
    let mult = match unit.as_str() {
        "" | "bps" | "bit/s" | "b/s" => 1.0,
        "kbps" | "kbit/s" | "kb/s" => 1e3,
        "mbps" | "mbit/s" | "mb/s" => 1e6,
        "gbps" | "gbit/s" | "gb/s" => 1e9,
        "tbps" | "tbit/s" | "tb/s" => 1e12,
        _ => return Err(format!("unknown rate unit '{unit}' (use bps, kbps, Mbps, Gbps or Tbps)")),
    };
    at_most(v * mult, MAX_RATE_BPS, "1 Tbit/s")
}

/// A duration: "20ms", "1.5s", "500us", "2min", "1h", or a number of seconds; at most
/// [`MAX_DURATION`].
pub fn duration(s: &str) -> Result<Dur, String> {
    let (v, unit) = split(s)?;
    let v = non_negative(v, "a duration")?;
    let mult = match unit.as_str() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "" | "s" | "sec" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(format!("unknown time unit '{unit}' (use ns, us, ms, s, min or h)")),
    };
    at_most(v * mult, MAX_DURATION.0, "1000000 s (about 11.6 days)").map(Dur)
}

/// A size in bytes: "1460B", "45KB", "4MB", "64KiB", or a number of bytes; at most
/// [`MAX_BYTES`] (settings with a lower ceiling check it where they are read).
pub fn bytes(s: &str) -> Result<u64, String> {
    let (v, unit) = split(s)?;
    let v = non_negative(v, "a size")?;
    let mult = match unit.as_str() {
        "" | "b" | "bytes" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "pb" => 1e15,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("unknown size unit '{unit}' (use B, KB, MB, GB, TB, KiB, MiB, GiB or TiB)")),
    };
    at_most(v * mult, MAX_BYTES, "1 PB")
}

/// A fraction: "1%", "0.5%", or a number in [0, 1].
pub fn fraction(s: &str) -> Result<f64, String> {
    let (v, unit) = split(s)?;
    let v = non_negative(v, "a probability")?;
    let f = match unit.as_str() {
        "%" => v / 100.0,
        "" => v,
        _ => return Err(format!("unknown unit '{unit}' (write a percentage like '1%' or a number in [0, 1])")),
    };
    if f > 1.0 {
        return Err("must be at most 100%".into());
    }
    Ok(f)
}

/// A factor written as a percentage or a number, which may exceed 100% ("150%", 0.5), at
/// most 100 (10000%).
pub fn fraction_any(s: &str) -> Result<f64, String> {
    let (v, unit) = split(s)?;
    let v = non_negative(v, "a factor")?;
    let f = match unit.as_str() {
        "%" => v / 100.0,
        "" => v,
        _ => return Err(format!("unknown unit '{unit}' (write a percentage like '50%' or a number)")),
    };
    if f > 100.0 {
        return Err("must be at most 10000%".into());
    }
    Ok(f)
}

/// A queue size: "100pkt" (packets) or a size in bytes ("45KB").
pub enum QueueSize {
    Packets(u64),
    Bytes(u64),
}

/// The largest queue accepted, in bytes: 10 GB.
pub const MAX_QUEUE_BYTES: u64 = 10_000_000_000;

/// A queue limit: "100pkt" (at most [`MAX_QUEUE_PACKETS`]) or a size in bytes ("45KB", at
/// most [`MAX_QUEUE_BYTES`]).
pub fn queue(s: &str) -> Result<QueueSize, String> {
    let (v, unit) = split(s)?;
    let v = non_negative(v, "a queue size")?;
    match unit.as_str() {
        "pkt" | "pkts" | "p" | "packets" | "packet" => at_most(v, MAX_QUEUE_PACKETS, "10000000 packets").map(QueueSize::Packets),
        _ => match bytes(s) {
            Ok(b) if b > MAX_QUEUE_BYTES => Err("must be at most 10 GB".into()),
            Ok(b) => Ok(QueueSize::Bytes(b)),
            Err(e) if e.starts_with("unknown") => {
                Err(format!("unknown queue unit '{unit}' (use packets like '100pkt' or bytes like '45KB')"))
            }
            Err(e) => Err(e),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(rate("10Mbps").unwrap(), 10_000_000);
        assert_eq!(rate("384kbps").unwrap(), 384_000);
        assert_eq!(rate("1.5 Gbit/s").unwrap(), 1_500_000_000);
        assert_eq!(rate("1200").unwrap(), 1200);
        assert!(rate("-5Mbps").unwrap_err().contains("negative"));
        assert!(rate("10 parsecs").unwrap_err().contains("unknown rate unit"));
        assert!(rate("fast").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(duration("20ms").unwrap(), Dur::from_millis(20));
        assert_eq!(duration("1.5s").unwrap(), Dur::from_millis(1500));
        assert_eq!(duration("2").unwrap(), Dur::from_secs(2));
        assert_eq!(duration("250us").unwrap(), Dur::from_micros(250));
        assert_eq!(duration("2min").unwrap(), Dur::from_secs(120));
    }

    #[test]
    fn sizes_and_queues() {
        assert_eq!(bytes("45KB").unwrap(), 45_000);
        assert_eq!(bytes("64KiB").unwrap(), 65_536);
        assert_eq!(bytes("1460B").unwrap(), 1460);
        assert!(matches!(queue("100pkt").unwrap(), QueueSize::Packets(100)));
        assert!(matches!(queue("5KB").unwrap(), QueueSize::Bytes(5000)));
        assert!(queue("5 bananas").is_err());
    }

    #[test]
    fn fractions() {
        assert_eq!(fraction("1%").unwrap(), 0.01);
        assert_eq!(fraction("0.02").unwrap(), 0.02);
        assert!(fraction("150%").is_err());
    }

    #[test]
    fn scientific_notation_everywhere() {
        assert_eq!(rate("1e9").unwrap(), 1_000_000_000);
        assert_eq!(rate("1.5E3kbps").unwrap(), 1_500_000);
        assert_eq!(duration("2e-3s").unwrap(), Dur::from_millis(2));
        assert_eq!(duration("1e3ms").unwrap(), Dur::from_secs(1));
        assert_eq!(bytes("4e6").unwrap(), 4_000_000);
        assert_eq!(bytes("1.46e3B").unwrap(), 1460);
        assert_eq!(fraction("1e-2").unwrap(), 0.01);
        assert_eq!(fraction("5e-1%").unwrap(), 0.005);
        assert!(matches!(queue("1e2pkt").unwrap(), QueueSize::Packets(100)));
        // an 'e' without digits after it is not an exponent
        assert!(rate("5e").unwrap_err().contains("unknown rate unit 'e'"));
        assert!(rate("e5").unwrap_err().contains("no number"));
    }

    #[test]
    fn values_beyond_the_limits_are_refused_with_the_limit() {
        assert_eq!(rate("1Tbps").unwrap(), MAX_RATE_BPS);
        assert_eq!(rate("1e30Gbps").unwrap_err(), "must be at most 1 Tbit/s");
        assert_eq!(rate("99999999999999999999999999Gbps").unwrap_err(), "must be at most 1 Tbit/s");
        assert!(rate("1e400").unwrap_err().contains("too large"));
        assert_eq!(duration("1000000s").unwrap(), MAX_DURATION);
        assert!(duration("1000001s").unwrap_err().contains("at most 1000000 s"));
        assert!(duration("1e300h").unwrap_err().contains("at most"));
        assert_eq!(bytes("999999999999999GB").unwrap_err(), "must be at most 1 PB");
        assert!(bytes("1PB").is_ok());
        assert!(matches!(queue("1e9pkt"), Err(e) if e.contains("10000000 packets")));
        assert!(matches!(queue("11GB"), Err(e) if e.contains("10 GB")));
        assert!(matches!(queue("1e400KB"), Err(e) if e.contains("too large")));
    }
}
