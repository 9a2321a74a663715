//! Syscall names and numbers (x86_64), over the generated table.

use super::syscall_table::X86_64;

/// Name of an x86_64 syscall number.
pub fn syscall_name(nr: usize) -> String {
    match X86_64.get(nr) {
        Some(n) if !n.is_empty() => (*n).to_string(),
        _ => format!("syscall_{nr}"),
    }
}

/// Number of a syscall name (for filters and tests).
#[cfg(any(test, feature = "testing"))]
pub fn syscall_nr(name: &str) -> Option<usize> {
    if name.is_empty() {
        return None;
    }
    X86_64.iter().position(|n| *n == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_names_round_trip() {
        assert_eq!(syscall_name(0), "read");
        assert_eq!(syscall_name(110), "getppid");
        assert_eq!(syscall_nr("getppid"), Some(110));
        assert_eq!(syscall_nr("io_uring_enter"), Some(426));
        assert_eq!(syscall_name(1000), "syscall_1000");
        assert_eq!(syscall_nr(""), None, "gaps in the table are not names");
    }
}
