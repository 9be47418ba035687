//! The address a `brainscan serve` child prints as its first stdout line, shared by the
//! tests and benches that start real server processes.

use std::io::{BufRead, BufReader};
use std::process::Child;

/// Reads the child's first stdout line (`… listening on http://ADDR`) and returns the base
/// URL. Panics with the line when the process did not start listening on loopback.
pub fn listening_base(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("the child's stdout is piped"))
        .read_line(&mut line)
        .expect("read the first line");
    let base = line
        .trim()
        .rsplit(' ')
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(
        base.starts_with("http://127.0.0.1:"),
        "brainscan serve did not start: {line:?}"
    );
    base
}
