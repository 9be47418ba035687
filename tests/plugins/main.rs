//! Plugin host tests: the hostile-plugin battery, hot swap under load with truthful
//! provenance, the crash-loop breaker, custom lenses, determinism of the defaults, and the
//! operator surfaces (admin HTTP API and `brainscan plugin …`). Every plugin here is a real
//! component built from `plugins/testkit` by the host's build script.

#[path = "../e2e/support.rs"]
mod support;

mod kit;

mod admin;
mod analyze;
mod cli;
mod hostile;
mod swap;
mod upgrade;
