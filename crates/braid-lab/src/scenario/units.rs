//! The units of a scenario file: parsed by the one parser in `braid_core::units` (so a rate
//! means in the lab what it means in the simulator), with the lab's ranges on top, and the
//! lab's compact printing (`20mbit`, `5ms`).

use std::time::Duration;

pub use braid_core::units::{check_percent, format_rate};

/// A rate in bits per second ([`braid_core::units::parse_rate`]) between 1kbit and 10gbit,
/// what the lab's forwarder can shape.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let bps = braid_core::units::parse_rate(text)?;
    if bps < 1000 {
        return Err(format!("rate {text:?} is below 1kbit"));
    }
    if bps > 10_000_000_000 {
        return Err(format!("rate {text:?} is above 10gbit"));
    }
    Ok(bps)
}

/// A duration ([`braid_core::units::parse_duration`]) of at most a day.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = braid_core::units::parse_duration(text)?;
    if d > Duration::from_secs(24 * 3600) {
        return Err(format!("duration {text:?} is out of range"));
    }
    Ok(d)
}

/// A loss percentage as a number of percent: `"1%"`, `"0.5 %"` or the bare number.
pub fn parse_percent(text: &str) -> Result<f64, String> {
    braid_core::units::parse_percent_value(text)
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
