//! One group of a corpus run alone, for a profiler or for counting
//! instructions: `--profile-corpus DIR DIALECT/FORM [SECONDS] [floor]
//! [--passes N]`.
//!
//! Each pass over the group's files runs in one of the two entry functions
//! below, toolstitch's or the floor's. They are `#[inline(never)]` and their
//! names are found nowhere else in the program (no function, closure or
//! method inside them is named after them), so that
//! `valgrind --tool=callgrind --collect-atstart=no
//! --toggle-collect=floor::count::measured_toolstitch` (or
//! `…::measured_floor`) collects exactly the passes: every instruction run
//! inside them, whatever was inlined into what, and nothing else. A pattern
//! with a wildcard (`*dialects::floor*`) also names the closures of
//! `dialects::floor` that were not inlined; each entry into one of those
//! toggles collection off again, which is how such a count once held a
//! thirtieth of the work. `benches/floor_instructions.py` takes the counts
//! and checks each against the whole program's count of one pass more,
//! which names no function at all.

use super::dialects::{self, File};
use std::time::Instant;

/// Toolstitch on each file (a fresh `BytesAssembler`, 64 KiB reads, `close`).
#[inline(never)]
pub fn measured_toolstitch(files: &[&File]) {
    for f in files {
        drop(std::hint::black_box(dialects::toolstitch(f)));
    }
}

/// The dialect's floor on each file.
#[inline(never)]
pub fn measured_floor(files: &[&File]) {
    for f in files {
        drop(std::hint::black_box(dialects::floor(f)));
    }
}

/// `--profile-corpus DIR DIALECT/FORM [SECONDS] [floor] [--passes N]`:
/// toolstitch (or the floor) alone on one group of a corpus, for about
/// SECONDS (5), for a profiler; `SECONDS` 0 is one pass, or `N` passes
/// with `--passes N` (for callgrind).
pub fn profile_corpus(args: &[String]) {
    let passes_wanted: u32 = args
        .iter()
        .position(|a| a == "--passes")
        .and_then(|at| args.get(at + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let dialect = args[1].split('/').next().unwrap();
    let files = dialects::load(std::path::Path::new(&args[0]), Some(dialect));
    let groups = dialects::groups(&files);
    let g = groups
        .iter()
        .find(|g| {
            format!(
                "{}/{}",
                g.dialect.name(),
                if g.body { "body" } else { "stream" }
            ) == args[1]
        })
        .unwrap();
    let seconds: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(5.0);
    let floor = args.get(3).is_some_and(|a| a == "floor");
    let t0 = Instant::now();
    let mut passes = 0_u32;
    while passes < passes_wanted || t0.elapsed().as_secs_f64() < seconds {
        if floor {
            measured_floor(&g.files);
        } else {
            measured_toolstitch(&g.files);
        }
        passes += 1;
    }
    #[allow(clippy::cast_precision_loss)]
    let per_file = t0.elapsed().as_secs_f64() / f64::from(passes) / g.files.len() as f64 * 1e6;
    println!("{}: {passes} passes, {per_file:.1} us per file", args[1]);
}
