//! Test kit: a component for a world brainscan does not serve.
#![cfg_attr(target_arch = "wasm32", no_std)]
extern crate alloc;
// The SDK supplies the allocator, panic handler and `cabi_realloc`.
use brainscan_sdk as _;

wit_bindgen::generate!({ path: "wit", world: "counter" });

struct Counter;
impl Guest for Counter {
    fn count(n: u32) -> u32 {
        n + 1
    }
}
export!(Counter);
