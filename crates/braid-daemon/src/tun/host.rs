//! The host side of TUN mode: the rules, routes, resolv.conf and forwarding switches it
//! changes, planned in a state file before they are made ([`system::Changes`]), applied, and
//! undone — also what a crashed run left behind.

use super::system::{self, Changes};
use super::TunSettings;
use crate::error::Failure;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;

/// The MSS the kernel advertises on connections routed into the TUN (the routes' `advmss`):
/// the largest TCP segment the stack's MTU carries over IPv4 (minus 20 + 20 bytes of headers)
/// and IPv6 (40 + 20). The routes keep the device MTU, so what the kernel sends into the TUN —
/// TCP segments, UDP datagrams — is no larger than before.
const ADVMSS_V4: u32 = super::dispatch::STACK_MTU as u32 - 40;
/// See [`ADVMSS_V4`].
const ADVMSS_V6: u32 = super::dispatch::STACK_MTU as u32 - 60;

/// Undoes what an earlier run left in `state_file` (it did not stop cleanly); says what it did.
pub fn undo_leftovers(state_file: &std::path::Path) -> Result<Option<String>, Failure> {
    let Some(old) = Changes::load(state_file).map_err(|e| Failure::Config(e.to_string()))? else {
        return Ok(None);
    };
    if old.pid != std::process::id() && system::alive_braid(old.pid) {
        return Err(Failure::Config(format!(
            "TUN mode: another braid (pid {}) is in TUN mode with the state file {}; stop it first",
            old.pid,
            state_file.display()
        )));
    }
    let failed = old.undo(state_file);
    if !failed.is_empty() {
        return Err(Failure::Other(format!(
            "TUN mode: could not undo what an earlier run (pid {}) changed: {}",
            old.pid,
            failed.join("; ")
        )));
    }
    Ok(Some(format!(
        "undid the routes, rules and DNS of an earlier run (pid {}) that did not stop cleanly",
        old.pid
    )))
}

/// The host changes TUN mode makes for `settings`: rules (and whether the default route
/// and IPv6 are taken), the old resolv.conf, the forwarding switches of gateway mode.
pub fn plan(settings: &TunSettings) -> Result<(Changes, bool, bool), Failure> {
    let default_route = settings.routes.is_empty();
    let ipv6 = settings.ipv6 && (default_route || settings.routes.iter().any(|(a, _)| a.is_ipv6()));
    let mut changes = Changes {
        pid: std::process::id(),
        device: settings.name.clone(),
        rules: system::rules(settings.table, settings.fwmark, settings.table, default_route, ipv6),
        table: settings.table,
        ipv6,
        resolv_conf: None,
        resolv_path: settings.resolv_conf.clone(),
        sysctls: Vec::new(),
    };
    if !settings.dns.is_empty() {
        let old = std::fs::read_to_string(&settings.resolv_conf).unwrap_or_default();
        changes.resolv_conf = Some(old);
    }
    if settings.gateway {
        let mut files = vec![PathBuf::from("/proc/sys/net/ipv4/ip_forward")];
        if ipv6 {
            files.push("/proc/sys/net/ipv6/conf/all/forwarding".into());
        }
        for f in files {
            let old = std::fs::read_to_string(&f)
                .map_err(|e| Failure::Config(format!("gateway mode: cannot read {}: {e}", f.display())))?;
            changes.sysctls.push((f, old.trim().to_string()));
        }
    }
    Ok((changes, default_route, ipv6))
}

/// Routes, rules, DNS and forwarding as planned.
pub fn apply(
    settings: &TunSettings,
    changes: &Changes,
    default_route: bool,
    ipv6: bool,
) -> Result<(), Failure> {
    let fail = |e: std::io::Error| Failure::Config(format!("TUN mode: {e}"));
    let table = settings.table.to_string();
    let mut routes: Vec<(IpAddr, u8)> = settings.routes.clone();
    if default_route {
        routes.push((Ipv4Addr::UNSPECIFIED.into(), 0));
        if ipv6 {
            routes.push((Ipv6Addr::UNSPECIFIED.into(), 0));
        }
    }
    for (addr, len) in routes {
        let (fam, advmss) = if addr.is_ipv4() { ("-4", ADVMSS_V4) } else { ("-6", ADVMSS_V6) };
        let prefix = format!("{addr}/{len}");
        let advmss = advmss.to_string();
        let route =
            [fam, "route", "replace", &prefix, "dev", &settings.name, "table", &table, "advmss", &advmss];
        system::ip(&route.map(String::from)).map_err(fail)?;
    }
    for r in &changes.rules {
        system::ip(r).map_err(fail)?;
    }
    if !settings.dns.is_empty() {
        let text = system::resolv_conf(changes.resolv_conf.as_deref().unwrap_or(""), &settings.dns);
        system::write_in_place(&settings.resolv_conf, &text).map_err(|e| {
            Failure::Config(format!("TUN mode: cannot write {}: {e}", settings.resolv_conf.display()))
        })?;
    }
    for (f, _) in &changes.sysctls {
        std::fs::write(f, "1")
            .map_err(|e| Failure::Config(format!("gateway mode: cannot write {}: {e}", f.display())))?;
    }
    Ok(())
}
