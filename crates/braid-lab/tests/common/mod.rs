//! Helpers shared by the root-only integration tests.

/// Why a root-only test cannot run here (not root, or a tool missing), or `None`.
pub fn skip_reason(tools: &[&str]) -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces)".into());
    }
    let missing: Vec<&str> =
        tools.iter().copied().filter(|t| braid_lab::sys::cmd::which(t).is_none()).collect();
    if !missing.is_empty() {
        return Some(format!("missing tools: {}", missing.join(", ")));
    }
    None
}
