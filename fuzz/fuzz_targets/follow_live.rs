#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| leveltable_fuzz_targets::follow_live::follow_live(data));
