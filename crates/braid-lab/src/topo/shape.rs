//! Rate shaping of one link end: offloads off (MTU-sized packets like a real link), then an
//! `htb` class at the link rate with a `bfifo` child sized to the configured queue time. A rate
//! change (`capacity=`) changes the class in place; the bfifo keeps its size in bytes, as a
//! modem's buffer does when its radio slows.

use anyhow::Result;

use crate::scenario::units::tc_rate;
use crate::scenario::{LabLink, LinkSpec};
use crate::sys::cmd;

/// The tc commands (without the `tc -n NS` prefix) that shape `dev` to `link`'s rate.
pub fn tc_commands(dev: &str, link: &LinkSpec) -> Vec<Vec<String>> {
    vec![
        words(&format!("qdisc add dev {dev} root handle 1: htb default 10")),
        class_command("add", dev, link.start_rate()),
        words(&format!("qdisc add dev {dev} parent 1:10 handle 10: bfifo limit {}", link.queue_bytes())),
    ]
}

/// Sets the shaper [`shape`] installed on `dev` in namespace `ns` to `bps` (a `capacity=`
/// change).
pub fn set_rate(ns: &str, dev: &str, bps: u64) -> Result<()> {
    tc(ns, &rate_command(dev, bps))
}

/// The tc command (without the `tc -n NS` prefix) that sets `dev`'s shaper to `bps`.
pub fn rate_command(dev: &str, bps: u64) -> Vec<String> {
    class_command("change", dev, bps)
}

fn class_command(verb: &str, dev: &str, bps: u64) -> Vec<String> {
    let rate = tc_rate(bps);
    words(&format!("class {verb} dev {dev} parent 1: classid 1:10 htb rate {rate} ceil {rate} quantum 1514"))
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

/// Turns offloads off and installs the shaper on `dev` in namespace `ns`.
pub fn shape(ns: &str, dev: &str, link: &LinkSpec) -> Result<()> {
    // Not every device supports every offload flag; a refusal is harmless.
    let _ = cmd::in_ns(ns, &["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"]);
    for c in tc_commands(dev, link) {
        tc(ns, &c)?;
    }
    Ok(())
}

/// Runs `tc -n NS` with `words`.
fn tc(ns: &str, words: &[String]) -> Result<()> {
    let mut args = vec!["tc", "-n", ns];
    args.extend(words.iter().map(String::as_str));
    cmd::run_ok(&args)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn htb_with_100ms_bfifo() {
        let link = LinkSpec::new(20_000_000, Duration::from_millis(5));
        let c = tc_commands("c1", &link);
        assert_eq!(
            c[1].join(" "),
            "class add dev c1 parent 1: classid 1:10 htb rate 20mbit ceil 20mbit quantum 1514"
        );
        assert_eq!(c[2].last().unwrap(), "250000");
    }

    #[test]
    fn a_capacity_schedule_starts_at_its_first_rate_and_changes_the_class() {
        let link = braid_sim::LinkSpec::parse("20mbit/5ms/capacity=10mbit@0s,50kbit@10s").unwrap();
        let c = tc_commands("c1", &link);
        assert!(c[1].join(" ").contains("htb rate 10mbit ceil 10mbit"), "{:?}", c[1]);
        // The queue stays sized at the link's rate (100 ms of 20 Mbit/s).
        assert_eq!(c[2].last().unwrap(), "250000");
        assert_eq!(
            rate_command("s1", 50_000).join(" "),
            "class change dev s1 parent 1: classid 1:10 htb rate 50kbit ceil 50kbit quantum 1514"
        );
    }
}
