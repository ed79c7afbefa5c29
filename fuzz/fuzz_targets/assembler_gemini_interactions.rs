//! The assembler for one dialect; see `toolstitch_fuzz::assembler`.
#![no_main]

use _toolstitch::providers::Dialect;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    toolstitch_fuzz::assembler(Some(Dialect::GeminiInteractions), data);
});
