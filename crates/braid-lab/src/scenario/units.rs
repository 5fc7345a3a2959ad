//! Parsing and printing of the units a scenario file uses: rates (`20mbit`), durations
//! (`5ms`, `10s`) and percentages (`1%` or a bare number of percent).

use std::time::Duration;

/// Parses a rate in bits per second, tc style: `bit`, `kbit`, `mbit`, `gbit` (powers of 1000),
/// case-insensitive, with an optional fractional part (`1.5mbit`).
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let t = text.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("rate {text:?} has no unit (write e.g. \"20mbit\")"))?;
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("rate {text:?}: {num:?} is not a number"))?;
    let scale = match unit.trim() {
        "bit" | "bps" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "mbps" | "kbps" | "gbps" => {
            return Err(format!(
                "rate {text:?}: {unit:?} is ambiguous (bytes or bits?); write kbit, mbit or gbit"
            ))
        }
        other => return Err(format!("rate {text:?}: unknown unit {other:?} (use bit, kbit, mbit or gbit)")),
    };
    let bps = value * scale;
    if !bps.is_finite() || bps < 1000.0 {
        return Err(format!("rate {text:?} is below 1kbit"));
    }
    if bps > 10e9 {
        return Err(format!("rate {text:?} is above 10gbit"));
    }
    Ok(bps.round() as u64)
}

/// Parses a duration: `us`, `ms`, `s`, `min` with an optional fractional part (`1.5s`).
/// A bare `0` is accepted; any other number needs a unit.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim().to_ascii_lowercase();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("duration {text:?} has no unit (write e.g. \"5ms\" or \"10s\")"))?;
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("duration {text:?}: {num:?} is not a number"))?;
    let secs = match unit.trim() {
        "us" => value / 1e6,
        "ms" => value / 1e3,
        "s" => value,
        "min" => value * 60.0,
        other => return Err(format!("duration {text:?}: unknown unit {other:?} (use us, ms, s or min)")),
    };
    if !secs.is_finite() || secs > 24.0 * 3600.0 {
        return Err(format!("duration {text:?} is out of range"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses a loss percentage: `"1%"`, `"0.5 %"` or the bare number of percent.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    let t = text.trim().trim_end_matches('%').trim();
    let value: f64 =
        t.parse().map_err(|_| format!("percentage {text:?} is not a number (write e.g. \"1%\")"))?;
    check_percent(value)
}

/// Checks that a percentage lies in [0, 100].
pub fn check_percent(value: f64) -> Result<f64, String> {
    if !(0.0..=100.0).contains(&value) {
        return Err(format!("percentage {value} is outside 0..100"));
    }
    Ok(value)
}

/// Formats bits per second the way tc and iperf3 users read them (`20 Mbit/s`).
pub fn format_rate(bps: f64) -> String {
    if bps >= 1e9 {
        format!("{:.2} Gbit/s", bps / 1e9)
    } else if bps >= 1e6 {
        format!("{:.2} Mbit/s", bps / 1e6)
    } else {
        format!("{:.1} kbit/s", bps / 1e3)
    }
}

/// Formats a rate as the short tc token (`20mbit`, `500kbit`).
pub fn tc_rate(bps: u64) -> String {
    if bps % 1_000_000 == 0 {
        format!("{}mbit", bps / 1_000_000)
    } else if bps % 1000 == 0 {
        format!("{}kbit", bps / 1000)
    } else {
        format!("{bps}bit")
    }
}

/// Formats a duration compactly (`5ms`, `10s`, `1.5s`).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1e3;
    if ms == 0.0 {
        "0".into()
    } else if ms < 1.0 {
        format!("{}us", d.as_micros())
    } else if ms < 1000.0 {
        format!("{}ms", trim_float(ms))
    } else {
        format!("{}s", trim_float(ms / 1e3))
    }
}

fn trim_float(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("20mbit"), Ok(20_000_000));
        assert_eq!(parse_rate("20Mbit"), Ok(20_000_000));
        assert_eq!(parse_rate("1.5mbit"), Ok(1_500_000));
        assert_eq!(parse_rate("500kbit"), Ok(500_000));
        assert!(parse_rate("20").unwrap_err().contains("no unit"));
        assert!(parse_rate("20mbps").unwrap_err().contains("ambiguous"));
        assert!(parse_rate("20furlongs").unwrap_err().contains("unknown unit"));
        assert!(parse_rate("x.ymbit").is_err());
        assert!(parse_rate("0mbit").is_err());
        assert!(parse_rate("100gbit").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5ms"), Ok(Duration::from_millis(5)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert!(parse_duration("5").unwrap_err().contains("no unit"));
        assert!(parse_duration("5 hours").is_err());
        assert!(parse_duration("99999min").is_err());
    }

    #[test]
    fn percents() {
        assert_eq!(parse_percent("1%"), Ok(1.0));
        assert_eq!(parse_percent(" 0.5 % "), Ok(0.5));
        assert!(parse_percent("150%").is_err());
        assert!(parse_percent("lots").is_err());
    }

    #[test]
    fn formatting() {
        assert_eq!(tc_rate(20_000_000), "20mbit");
        assert_eq!(tc_rate(1_500_000), "1500kbit");
        assert_eq!(format_duration(Duration::from_millis(5)), "5ms");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_rate(19.1e6), "19.10 Mbit/s");
    }
}
