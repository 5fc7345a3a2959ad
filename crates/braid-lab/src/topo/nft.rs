//! nftables rule sets for random loss and link cuts, attached to a link end's ingress hook
//! (`netdev` family), so they act on the packets the emulated link delivers.

/// Name of the loss table on device `dev`.
pub fn loss_table(dev: &str) -> String {
    format!("braidlab_loss_{dev}")
}

/// Name of the cut table on device `dev`.
pub fn cut_table(dev: &str) -> String {
    format!("braidlab_cut_{dev}")
}

/// Random loss of `percent` on packets arriving at `dev` (TCP, UDP and ICMP only, so ARP keeps
/// working), in steps of 0.01%. Applied at both ends, each direction loses `percent`.
pub fn loss_rules(dev: &str, percent: f64) -> String {
    let per_10000 = (percent * 100.0).round() as u32;
    format!(
        "table netdev {t} {{\n  chain in {{\n    type filter hook ingress device \"{dev}\" priority 0; policy accept;\n    meta l4proto {{ tcp, udp, icmp }} numgen random mod 10000 < {per_10000} counter drop\n  }}\n}}\n",
        t = loss_table(dev)
    )
}

/// Drops every packet arriving at `dev` (ARP included). With the table on both ends of a link
/// nothing crosses it in either direction; unlike `ip link set down` on a VDE tap, the peer
/// cannot keep sending into a link that still has carrier and have it delivered.
pub fn cut_rules(dev: &str) -> String {
    format!(
        "table netdev {t} {{\n  chain in {{\n    type filter hook ingress device \"{dev}\" priority -10; policy accept;\n    counter drop\n  }}\n}}\n",
        t = cut_table(dev)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_rule_scales_percent() {
        let r = loss_rules("c1", 1.0);
        assert!(r.contains("mod 10000 < 100 counter drop"), "{r}");
        assert!(r.contains("table netdev braidlab_loss_c1"));
        assert!(loss_rules("s2", 0.05).contains("< 5 counter"));
    }

    #[test]
    fn cut_rule_drops_everything() {
        let r = cut_rules("s1");
        assert!(r.contains("device \"s1\""));
        assert!(r.contains("counter drop"));
        assert!(!r.contains("l4proto"));
    }
}
