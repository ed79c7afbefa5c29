//! The assembler in `auto` mode; see `toolstitch_fuzz::assembler`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    toolstitch_fuzz::assembler(None, data);
});
