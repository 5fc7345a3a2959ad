//! Rate shaping of one link end: offloads off (MTU-sized packets like a real link), then an
//! `htb` class at the link rate with a `bfifo` child sized to the configured queue time.

use anyhow::Result;

use crate::scenario::units::tc_rate;
use crate::scenario::LinkSpec;
use crate::sys::cmd;

/// The tc commands (without the `tc -n NS` prefix) that shape `dev` to `link`'s rate.
pub fn tc_commands(dev: &str, link: &LinkSpec) -> Vec<Vec<String>> {
    let rate = tc_rate(link.rate_bps);
    let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    vec![
        words(&format!("qdisc add dev {dev} root handle 1: htb default 10")),
        words(&format!(
            "class add dev {dev} parent 1: classid 1:10 htb rate {rate} ceil {rate} quantum 1514"
        )),
        words(&format!("qdisc add dev {dev} parent 1:10 handle 10: bfifo limit {}", link.queue_bytes())),
    ]
}

/// Turns offloads off and installs the shaper on `dev` in namespace `ns`.
pub fn shape(ns: &str, dev: &str, link: &LinkSpec) -> Result<()> {
    // Not every device supports every offload flag; a refusal is harmless.
    let _ = cmd::in_ns(ns, &["ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off"]);
    for c in tc_commands(dev, link) {
        let mut args = vec!["tc", "-n", ns];
        args.extend(c.iter().map(String::as_str));
        cmd::run_ok(&args)?;
    }
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
}
