# The README's commands, and the checks CI runs.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test lint bench develop release clean fuzz fuzz-build

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet "maturin>=1.9,<2"

# Builds the extension into the virtualenv with the test (and lint, bench) extras.
develop: $(PY)
	$(VENV)/bin/maturin develop --quiet --extras test,lint,bench

release: $(PY)
	$(VENV)/bin/maturin develop --quiet --release --extras test,lint,bench

run: develop
	$(PY) examples/quickstart.py

test: develop
	cargo test --quiet
	$(PY) -m pytest -q

lint: develop
	cargo fmt --check
	cargo clippy --all-targets --features python -- -D warnings
	$(VENV)/bin/ruff check python tests benches examples fuzz
	$(VENV)/bin/ruff format --check python tests benches examples fuzz
	$(VENV)/bin/mypy python tests benches examples fuzz

bench: release
	$(PY) benches/bench_accumulate.py
	$(PY) benches/bench_partial_json.py
	$(PY) benches/bench_stream.py

# Fuzzing (nightly Rust and cargo-fuzz: see docs/fuzzing.md). Short by default;
# FUZZ_RUNS=2000000 or FUZZ_SECONDS=600 for a campaign, FUZZ_TARGETS to pick.
FUZZ_TARGETS ?=
fuzz:
	fuzz/run.sh $(FUZZ_TARGETS)

# Only builds the fuzz targets (keeps them compiling); nightly when installed,
# else the default toolchain (sanitizers off builds on stable).
FUZZ_CARGO := $(shell cargo +nightly --version >/dev/null 2>&1 && echo "cargo +nightly" || echo cargo)
fuzz-build:
	cd fuzz && $(FUZZ_CARGO) fuzz build -s none -a

clean:
	rm -rf target $(VENV)
