//! Compiles `calibration.tsv` into the crate as constants, so a plugin call looks its
//! calibration up instead of parsing the table's text. Parsing it on every call (each call is
//! a fresh wasm instance, so nothing can be kept) was, with float formatting, the largest cost
//! of the default lens plugin in wasm under `perf`: scanning the provenance lines and parsing
//! `f64`s. The numbers are written as their bit patterns, so the compiled table is exactly what
//! `calibration::parse` reads from the text (a unit test checks that).

extern crate alloc;

#[path = "src/table.rs"]
mod table;

use std::fmt::Write as _;

fn main() {
    println!("cargo::rerun-if-changed=calibration.tsv");
    println!("cargo::rerun-if-changed=src/table.rs");
    let text = std::fs::read_to_string("calibration.tsv").expect("read calibration.tsv");
    let mut out = String::from("&[\n");
    for name in table::names(&text) {
        // A line that does not parse, or whose numbers are no valid calibration, is left out:
        // `embedded` then answers `None` for it, as `parse` does for the text, and a lookup of
        // a compiled line needs no check.
        let Some((spread, knots)) = table::parse_line(&text, name) else {
            continue;
        };
        if !table::valid(spread, &knots) {
            continue;
        }
        write!(
            out,
            "    ({name:?}, f64::from_bits({:#x}), &[",
            spread.to_bits()
        )
        .unwrap();
        for (v, p) in knots {
            write!(
                out,
                "(f64::from_bits({:#x}), f64::from_bits({:#x})), ",
                v.to_bits(),
                p.to_bits()
            )
            .unwrap();
        }
        out.push_str("]),\n");
    }
    out.push(']');
    let dest = std::path::Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR"))
        .join("calibration_table.rs");
    std::fs::write(dest, out).expect("write the compiled table");
}
