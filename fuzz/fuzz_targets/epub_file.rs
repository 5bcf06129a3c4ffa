//! An EPUB's bytes, as `dramatis ingest` reads them (see
//! `dramatis_formats::fuzz_checks::epub_file`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    dramatis_formats::fuzz_checks::epub_file(data);
});
