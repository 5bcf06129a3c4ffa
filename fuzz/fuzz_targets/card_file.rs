//! A character card's bytes, PNG or JSON, as `dramatis import card` reads them (see
//! `dramatis_formats::fuzz_checks::card_file`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dramatis_formats::fuzz_checks::card_file(data);
});
