//! An inline sandbox spec's bytes, as `CreateWorld` receives them (see
//! `dramatis_scenario::fuzz_checks::sandbox_spec`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dramatis_scenario::fuzz_checks::sandbox_spec(data);
});
