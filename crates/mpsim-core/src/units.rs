//! Parsing of quantities written as strings with units: "10Mbps", "20ms", "45KB", "1%".
//!
//! Bare numbers are accepted in the base unit (bit/s, seconds, bytes, packets, fraction).
//! Byte prefixes are decimal (KB = 1000 B) unless written as KiB/MiB/GiB.

use crate::time::Dur;

/// Splits "12.5 Mbps" into (12.5, "mbps"): number, then the unit in lower case.
fn split(s: &str) -> Result<(f64, String), String> {
    let s = s.trim();
    let idx = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(idx);
    if num.is_empty() {
        return Err("no number".into());
    }
    let v: f64 = num.parse().map_err(|_| format!("'{num}' is not a number"))?;
    if !v.is_finite() {
        return Err("not a finite number".into());
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

/// A rate in bit/s: "10Mbps", "384kbps", "1.5Gbit/s", or a number of bit/s.
pub fn rate(s: &str) -> Result<u64, String> {
    let (v, unit) = split(s)?;
    let v = non_negative(v, "a rate")?;
    let mult = match unit.as_str() {
        "" | "bps" | "bit/s" | "b/s" => 1.0,
        "kbps" | "kbit/s" | "kb/s" => 1e3,
        "mbps" | "mbit/s" | "mb/s" => 1e6,
        "gbps" | "gbit/s" | "gb/s" => 1e9,
        _ => return Err(format!("unknown rate unit '{unit}' (use bps, kbps, Mbps or Gbps)")),
    };
    Ok((v * mult).round() as u64)
}

/// A duration: "20ms", "1.5s", "500us", "2min", or a number of seconds.
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
        _ => return Err(format!("unknown time unit '{unit}' (use ns, us, ms, s or min)")),
    };
    Ok(Dur((v * mult).round() as u64))
}

/// A size in bytes: "1460B", "45KB", "4MB", "64KiB", or a number of bytes.
pub fn bytes(s: &str) -> Result<u64, String> {
    let (v, unit) = split(s)?;
    let v = non_negative(v, "a size")?;
    let mult = match unit.as_str() {
        "" | "b" | "bytes" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("unknown size unit '{unit}' (use B, KB, MB, GB, KiB, MiB or GiB)")),
    };
    Ok((v * mult).round() as u64)
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

pub fn queue(s: &str) -> Result<QueueSize, String> {
    let (v, unit) = split(s)?;
    let v = non_negative(v, "a queue size")?;
    match unit.as_str() {
        "pkt" | "pkts" | "p" | "packets" | "packet" => Ok(QueueSize::Packets(v.round() as u64)),
        _ => bytes(s).map(QueueSize::Bytes).map_err(|_| {
            format!("unknown queue unit '{unit}' (use packets like '100pkt' or bytes like '45KB')")
        }),
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
}
