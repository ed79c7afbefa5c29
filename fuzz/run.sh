#!/usr/bin/env bash
# Builds and runs the fuzz targets (libFuzzer through cargo-fuzz, nightly Rust).
#
#   fuzz/run.sh [TARGET...]          every target when none is named
#
# Environment:
#   FUZZ_RUNS     executions per target (default 20000: a short run)
#   FUZZ_SECONDS  seconds per target instead of a run count (when set; with
#                 FUZZ_RUNS set too, whichever is reached first)
#   FUZZ_NICE     niceness of the fuzzing processes (default 19)
#   FUZZ_BUILD    set to 0 to skip the build step
#
# New inputs go to fuzz/corpus/TARGET (not committed); the committed seeds in
# fuzz/seeds/TARGET are read too. A crash leaves its input in
# fuzz/artifacts/TARGET and fails the run. Each target prints one summary
# line: executions, seconds, executions per second.
set -euo pipefail
cd "$(dirname "$0")"
here=$(pwd)

ALL=(
    framing_sse framing_jsonl framing_eventstream
    assembler_openai_chat assembler_openai_responses assembler_anthropic
    assembler_bedrock assembler_gemini assembler_cohere assembler_ollama
    assembler_bedrock_invoke assembler_gemini_interactions assembler_auto
    wire_roundtrip partial_vs_strict schema_compile guard guard_differential
)
if [ "$#" -gt 0 ]; then targets=("$@"); else targets=("${ALL[@]}"); fi

# Nightly when it is installed; `--sanitizer none` also builds on stable.
if cargo +nightly --version >/dev/null 2>&1; then CARGO=(cargo +nightly); else CARGO=(cargo); fi

# Sanitizers off (the crate forbids unsafe code; throughput matters more),
# debug assertions and overflow checks on.
FLAGS=(-s none -a)

max_len() {
    case "$1" in
        assembler_* | guard) echo 2048 ;;
        guard_differential) echo 4096 ;;
        framing_*) echo 8192 ;;
        wire_roundtrip) echo 4096 ;;
        partial_vs_strict) echo 2048 ;;
        schema_compile) echo 1024 ;;
    esac
}

dict() {
    case "$1" in
        assembler_*) echo "dicts/${1#assembler_}.dict" ;;
        framing_eventstream) echo dicts/eventstream.dict ;;
        framing_*) echo dicts/framing.dict ;;
        wire_roundtrip) echo dicts/wire.dict ;;
        partial_vs_strict) echo dicts/json.dict ;;
        schema_compile) echo dicts/schema.dict ;;
        guard | guard_differential) echo dicts/auto.dict ;;
    esac
}

if [ "${FUZZ_BUILD:-1}" != 0 ]; then
    nice -n "${FUZZ_NICE:-19}" "${CARGO[@]}" fuzz build "${FLAGS[@]}"
fi

budget=(-runs="${FUZZ_RUNS:-20000}")
if [ -n "${FUZZ_SECONDS:-}" ]; then
    if [ -n "${FUZZ_RUNS:-}" ]; then
        budget+=(-max_total_time="$FUZZ_SECONDS")  # whichever comes first
    else
        budget=(-max_total_time="$FUZZ_SECONDS")
    fi
fi

status=0
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    log="$here/artifacts/$t/last-run.log"
    start=$(date +%s)
    set +e
    # One job, one worker: libFuzzer runs the campaign in a child process and
    # writes its output to fuzz-0.log in the working directory, here the
    # target's artifact folder (so that several targets may run at once).
    (
        cd "artifacts/$t" && rm -f fuzz-0.log &&
            nice -n "${FUZZ_NICE:-19}" "${CARGO[@]}" fuzz run --fuzz-dir "$here" "${FLAGS[@]}" "$t" \
                "$here/corpus/$t" "$here/seeds/$t" -- \
                -jobs=1 -workers=1 -dict="$here/$(dict "$t")" -max_len="$(max_len "$t")" \
                -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 \
                -artifact_prefix="$here/artifacts/$t/" "${budget[@]}"
    ) >"$log" 2>&1
    rc=$?
    set -e
    if [ -f "artifacts/$t/fuzz-0.log" ]; then
        cat "artifacts/$t/fuzz-0.log" >>"$log"
        rm -f "artifacts/$t/fuzz-0.log"
    fi
    secs=$(($(date +%s) - start))
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(( ${runs:-0} / (secs > 0 ? secs : 1) ))
    if [ "$rc" -ne 0 ]; then
        status=1
        echo "$t: FAILED after ${runs:-?} executions in ${secs}s (log: fuzz/artifacts/$t/last-run.log)"
        grep -E "panicked|ERROR|SUMMARY|Test unit written" "$log" | head -8 || true
    else
        echo "$t: ${runs:-?} executions in ${secs}s (${rate:-?}/s)"
    fi
done
exit "$status"
