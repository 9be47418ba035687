//! Identifiers and the random tokens they are made of.

use rand::Rng;
use rand::distr::Alphanumeric;

/// A random base-62 token from the OS-seeded CSPRNG (`rand::rng`).
pub fn token(len: usize) -> String {
    rand::rng()
        .sample_iter(&Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

/// A scan id as the spec shows it: `<model>_run_<token>_<token>`. Clients treat it as opaque.
pub fn new_scan_id(model: &str) -> String {
    format!("{model}_run_{}_{}", token(10), token(14))
}

/// Cheap syntactic check so malformed ids are answered 404 without a database round trip.
pub fn looks_like_scan_id(id: &str) -> bool {
    id.len() <= 80
        && id.contains("_run_")
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

pub fn new_org_id() -> String {
    format!("org_{}", token(16))
}

pub fn new_job_id() -> String {
    format!("job_{}", token(20))
}

pub fn new_ledger_id() -> String {
    format!("led_{}", token(20))
}

pub fn new_message_id() -> String {
    format!("msg_{}", token(24))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_ids_have_the_spec_shape_and_are_unique() {
        let a = new_scan_id("qualia");
        let b = new_scan_id("qualia");
        assert!(a.starts_with("qualia_run_"));
        assert_eq!(a.split('_').count(), 4);
        assert!(looks_like_scan_id(&a));
        assert_ne!(a, b);
        assert!(!looks_like_scan_id("../etc/passwd"));
        assert!(!looks_like_scan_id("qualia_run_a b"));
    }
}
