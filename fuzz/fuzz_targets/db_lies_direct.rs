#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    leveltable_fuzz_targets::db_lies::db_lies_direct(data);
});
