//! A scenario file's text through the validator (see
//! `dramatis_scenario::fuzz_checks::scenario_text`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dramatis_scenario::fuzz_checks::scenario_text(data);
});
