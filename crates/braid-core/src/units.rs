//! Parsing and printing of the units used in link specs, workloads and configuration: rates
//! (`20mbit`, `256kbit`, `1gbit`, `9600bit`), durations (`10ms`, `1.5s`, `250us`) and
//! percentages (`1%`, `0.5%`).

use std::time::Duration;

/// A rate in bit/s from text such as `20mbit`, `256kbit`, `1.5gbit`, `800bit`, `2mbps`.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let units: [(&str, f64); 8] = [
        ("gbit", 1e9),
        ("mbit", 1e6),
        ("kbit", 1e3),
        ("gbps", 1e9),
        ("mbps", 1e6),
        ("kbps", 1e3),
        ("bps", 1.0),
        ("bit", 1.0),
    ];
    for (suffix, mult) in units {
        if let Some(num) = t.strip_suffix(suffix) {
            let v: f64 = num.trim().parse().map_err(|_| format!("'{s}' is not a rate (e.g. 20mbit)"))?;
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("rate '{s}' must be positive"));
            }
            return Ok((v * mult).round() as u64);
        }
    }
    Err(format!("'{s}' is not a rate: use a number with bit, kbit, mbit or gbit (e.g. 20mbit)"))
}

/// A duration from text such as `10ms`, `1.5s`, `250us`, `2m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim().to_ascii_lowercase();
    let units: [(&str, f64); 5] = [("us", 1e-6), ("ms", 1e-3), ("s", 1.0), ("m", 60.0), ("h", 3600.0)];
    for (suffix, mult) in units {
        if let Some(num) = t.strip_suffix(suffix) {
            if let Ok(v) = num.trim().parse::<f64>() {
                if v >= 0.0 && v.is_finite() {
                    return Ok(Duration::from_secs_f64(v * mult));
                }
            }
            return Err(format!("'{s}' is not a duration (e.g. 10ms, 1.5s)"));
        }
    }
    Err(format!("'{s}' is not a duration: use a number with us, ms, s or m (e.g. 10ms)"))
}

/// A probability from a percentage such as `1%` or `0.5%` (a bare number is also a percent).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let num = t.strip_suffix('%').unwrap_or(t);
    let v: f64 = num.trim().parse().map_err(|_| format!("'{s}' is not a percentage (e.g. 1%)"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("percentage '{s}' must be between 0% and 100%"));
    }
    Ok(v / 100.0)
}

/// A byte count from text such as `20GB`, `500MB`, `1.5GiB`, `64kB`, `1200B` (SI and binary
/// prefixes, as carriers' data caps are written).
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let units: [(&str, f64); 9] = [
        ("tib", 1024f64 * 1024.0 * 1024.0 * 1024.0),
        ("gib", 1024f64 * 1024.0 * 1024.0),
        ("mib", 1024f64 * 1024.0),
        ("kib", 1024.0),
        ("tb", 1e12),
        ("gb", 1e9),
        ("mb", 1e6),
        ("kb", 1e3),
        ("b", 1.0),
    ];
    for (suffix, mult) in units {
        if let Some(num) = t.strip_suffix(suffix) {
            let v: f64 = num.trim().parse().map_err(|_| format!("'{s}' is not a size (e.g. 20GB)"))?;
            if !(v > 0.0 && v.is_finite() && v * mult < 1.8e19) {
                return Err(format!("size '{s}' must be positive"));
            }
            return Ok((v * mult).round() as u64);
        }
    }
    Err(format!("'{s}' is not a size: use a number with B, kB, MB, GB, TB or KiB, MiB, GiB (e.g. 20GB)"))
}

/// Formats a byte count for people: `1.23 GB`.
pub fn format_bytes(n: u64) -> String {
    let v = n as f64;
    if v >= 1e12 {
        format!("{:.2} TB", v / 1e12)
    } else if v >= 1e9 {
        format!("{:.2} GB", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.2} MB", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} kB", v / 1e3)
    } else {
        format!("{n} B")
    }
}

/// Formats bit/s for people: `19.87 Mbit/s`.
pub fn format_rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.2} Mbit/s", bps / 1e6)
    } else {
        format!("{:.1} kbit/s", bps / 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_rate("20mbit"), Ok(20_000_000));
        assert_eq!(parse_rate("256kbit"), Ok(256_000));
        assert_eq!(parse_rate("1.5Gbit"), Ok(1_500_000_000));
        assert!(parse_rate("20").is_err());
        assert!(parse_rate("-1mbit").is_err());
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("xms").is_err());
        assert_eq!(parse_percent("1%"), Ok(0.01));
        assert!(parse_percent("120%").is_err());
        assert_eq!(parse_bytes("20GB"), Ok(20_000_000_000));
        assert_eq!(parse_bytes("1.5GiB"), Ok(1_610_612_736));
        assert_eq!(parse_bytes("1200B"), Ok(1200));
        assert!(parse_bytes("20").is_err());
        assert!(parse_bytes("0GB").is_err());
        assert!(parse_bytes("99999999TB").is_err());
        assert_eq!(format_bytes(1_234_000_000), "1.23 GB");
    }
}
