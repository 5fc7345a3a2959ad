//! The one parser of the units in link specs, lab scenarios, workloads and configuration:
//! rates (`20mbit`, `256kbit`, `2MB`), durations (`10ms`, `1.5s`, `250us`), percentages
//! (`1%`) and sizes (`20GB`); and their printing. The simulator, the lab and the daemon all
//! read through it, so a value means the same everywhere.

use std::time::Duration;

/// Splits `text` into its number and its unit (`"1.5 mbit"` → `(1.5, "mbit")`); `what` names
/// the quantity in errors.
fn split_number<'a>(text: &'a str, what: &str, example: &str) -> Result<(f64, &'a str), String> {
    let t = text.trim();
    let split =
        t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 =
        num.parse().map_err(|_| format!("{what} {text:?}: {num:?} is not a number (e.g. {example})"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("{what} {text:?} must not be negative"));
    }
    Ok((value, unit.trim()))
}

/// A rate in bit/s: `bit`, `kbit`, `mbit`, `gbit` (powers of 1000, any case, as tc writes
/// them) or bytes per second `B`, `kB`, `MB`, `GB`. `mbps`, `Mb` and the like are refused:
/// tc reads `mbps` as megabytes, most people as megabits.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text, "rate", "20mbit")?;
    let bits = match unit {
        "B" => 8.0,
        "kB" | "KB" => 8e3,
        "MB" => 8e6,
        "GB" => 8e9,
        _ => match unit.to_ascii_lowercase().as_str() {
            "" => return Err(format!("rate {text:?} has no unit (write e.g. \"20mbit\")")),
            "bit" => 1.0,
            "kbit" => 1e3,
            "mbit" => 1e6,
            "gbit" => 1e9,
            u @ ("bps" | "kbps" | "mbps" | "gbps" | "b" | "kb" | "mb" | "gb") => {
                let prefix = &u[..u.len() - u.trim_start_matches(['k', 'm', 'g']).len()];
                let n = text.trim().strip_suffix(unit).unwrap_or(text).trim();
                let (words, bytes) = match prefix {
                    "k" => ("kilobits", "kB"),
                    "m" => ("megabits", "MB"),
                    "g" => ("gigabits", "GB"),
                    _ => ("bits", "B"),
                };
                let bytes_word = words.replace("bits", "bytes");
                return Err(format!(
                    "rate {text:?} is ambiguous: write {n}{prefix}bit for {words} or {n}{bytes} for {bytes_word} per second"
                ));
            }
            _ => {
                return Err(format!(
                    "rate {text:?}: unknown unit {unit:?} (use bit, kbit, mbit, gbit, or B, kB, MB, GB per second)"
                ))
            }
        },
    };
    let bps = value * bits;
    if !(1.0..1.8e19).contains(&bps) {
        return Err(format!("rate {text:?} must be at least 1 bit/s"));
    }
    Ok(bps.round() as u64)
}

/// A duration: `us`, `ms`, `s`, `m` or `min`, `h`, with an optional fraction (`1.5s`). A bare
/// `0` needs no unit.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    if text.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    let (value, unit) = split_number(text, "duration", "10ms")?;
    let secs = match unit.to_ascii_lowercase().as_str() {
        "" => return Err(format!("duration {text:?} has no unit (write e.g. \"5ms\" or \"10s\")")),
        "us" => value / 1e6,
        "ms" => value / 1e3,
        "s" => value,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        _ => return Err(format!("duration {text:?}: unknown unit {unit:?} (use us, ms, s, min or h)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|_| format!("duration {text:?} is out of range"))
}

/// A percentage as a number from 0 to 100: `1%`, `0.5 %` or a bare number of percent.
pub fn parse_percent_value(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let num = t.strip_suffix('%').unwrap_or(t).trim();
    let v: f64 =
        num.parse().map_err(|_| format!("percentage {text:?} is not a number (write e.g. \"1%\")"))?;
    check_percent(v)
}

/// Checks that a percentage lies in [0, 100].
pub fn check_percent(value: f64) -> Result<f64, String> {
    if !(0.0..=100.0).contains(&value) {
        return Err(format!("percentage {value} is outside 0..100"));
    }
    Ok(value)
}

/// A probability from a percentage such as `1%` or `0.5%` (see [`parse_percent_value`]).
pub fn parse_percent(text: &str) -> Result<f64, String> {
    parse_percent_value(text).map(|v| v / 100.0)
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
        assert!(parse_rate("20").unwrap_err().contains("no unit"));
        assert!(parse_rate("-1mbit").is_err());
        assert!(parse_rate("0mbit").is_err());
        assert!(parse_rate("20furlongs").unwrap_err().contains("unknown unit"));
        assert_eq!(parse_duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("10").unwrap_err().contains("no unit"));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("5 hours").is_err());
        assert!(parse_duration("xms").is_err());
        assert_eq!(parse_percent("1%"), Ok(0.01));
        assert!(parse_percent("120%").is_err());
        assert_eq!(parse_percent_value(" 0.5 % "), Ok(0.5));
        assert_eq!(parse_percent_value("1"), Ok(1.0));
        assert_eq!(parse_bytes("20GB"), Ok(20_000_000_000));
        assert_eq!(parse_bytes("1.5GiB"), Ok(1_610_612_736));
        assert_eq!(parse_bytes("1200B"), Ok(1200));
        assert!(parse_bytes("20").is_err());
        assert!(parse_bytes("0GB").is_err());
        assert!(parse_bytes("99999999TB").is_err());
        assert_eq!(format_bytes(1_234_000_000), "1.23 GB");
    }

    /// tc reads `mbps` as megabytes per second, most people as megabits: refused everywhere,
    /// with both spellings that say what is meant.
    #[test]
    fn ambiguous_rates_are_refused_with_both_meanings() {
        let e = parse_rate("10mbps").unwrap_err();
        assert!(e.contains("ambiguous") && e.contains("10mbit for megabits"), "{e}");
        assert!(e.contains("10MB for megabytes per second"), "{e}");
        for bad in ["10Mbps", "10 kbps", "1gbps", "10Mb", "5kb", "64bps"] {
            assert!(parse_rate(bad).unwrap_err().contains("ambiguous"), "{bad}");
        }
        assert!(parse_rate("1GBPS").unwrap_err().contains("1gbit for gigabits or 1GB for gigabytes"));
        // Bytes per second, written with a capital B.
        assert_eq!(parse_rate("10MB"), Ok(80_000_000));
        assert_eq!(parse_rate("64kB"), Ok(512_000));
        assert_eq!(parse_rate("100B"), Ok(800));
    }
}
