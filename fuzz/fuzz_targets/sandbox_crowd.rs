//! A small input standing for a large inline sandbox spec: a count of copies, then a
//! spec (see `dramatis_scenario::fuzz_checks::sandbox_crowd`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dramatis_scenario::fuzz_checks::sandbox_crowd(data);
});
