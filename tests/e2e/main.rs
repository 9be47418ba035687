//! End-to-end tests: the real router (or the real binary) on a loopback port, a fresh SQLite
//! file per test, and a loopback media server. Folders mirror the API.

#![recursion_limit = "512"]

mod support;

mod artifacts;
mod auth;
mod billing;
mod compare;
mod connections;
mod console;
mod cortex;
mod crafted_media;
mod docs;
mod intelligence;
mod local_analyze;
mod mcp;
mod openapi;
mod pages;
mod people;
mod process;
mod scans;
mod shape;
mod shared_data;
mod ssrf;
mod webhooks;
