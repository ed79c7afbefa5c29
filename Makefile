# The README's commands, and the checks CI runs.
#
# The machine needs only cargo and python3 (with venv). Everything else lives in
# .venv, which the first target that needs it creates: pip is upgraded there
# (dependency groups need pip >= 25.1) and maturin is installed there, so every
# build below runs .venv/bin/maturin, never one found on PATH.
VENV ?= .venv
PY := $(VENV)/bin/python
MATURIN := $(VENV)/bin/maturin
TOOLS := $(VENV)/.tools-installed

.PHONY: run test lint bench extension develop release dist dist-check wheel-check docs clean fuzz fuzz-build conformance

$(PY):
	python3 -m venv $(VENV)

# Redone when this Makefile changes, so an older .venv gets a recent pip too.
$(TOOLS): Makefile | $(PY)
	$(PY) -m pip install --quiet --upgrade "pip>=25.1" "maturin>=1.9,<2"
	touch $@

# The extension alone (debug build) with the command line's extra, installed
# editable into .venv with no development tools: all the main job needs. (pip
# rather than `maturin develop`, which also installs pyproject.toml's `dev`
# dependency group by default.)
extension: $(TOOLS)
	@echo "== building the Rust extension (debug) and installing it into $(VENV)"
	@echo "   (the first build compiles every crate: minutes on a small machine; cargo's"
	@echo "    progress follows, then pip's)"
	MATURIN_PEP517_ARGS="--profile dev" $(PY) -m pip install --verbose --progress-bar off \
		--no-build-isolation --editable ".[cli]" 2>&1 \
		| $(PY) .ci/build_progress.py

# The extension (debug), the extras the tests run for real (the command line, Dask,
# OpenTelemetry, the proxy and Arrow) and the development tools: pyproject.toml's dependency
# group `dev` (the groups test, lint and bench).
EXTRAS := cli,dask,otel,proxy,arrow

develop: $(TOOLS)
	$(MATURIN) develop --quiet --group dev --extras $(EXTRAS)

release: $(TOOLS)
	$(MATURIN) develop --quiet --release --features python,relay,bench-baseline --group dev \
		--extras $(EXTRAS)

# The main job: replays the recordings bundled with the package.
run: extension
	@echo "== toolstitch replay: the recordings bundled with the package"
	$(VENV)/bin/toolstitch replay

# pytest on PYTEST_WORKERS processes (pytest-xdist); `make test PYTEST_WORKERS=0` runs
# it in one.
PYTEST_WORKERS ?= 2

test: develop
	cargo test --quiet
	$(PY) -m pytest -q -n $(PYTEST_WORKERS)

lint: develop
	cargo fmt --check
	cargo clippy --quiet --all-targets --features python,relay,bench-baseline -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --quiet --features python,relay
	$(VENV)/bin/ruff check python tests benches examples .ci fuzz conformance
	$(VENV)/bin/ruff format --check python tests benches examples .ci fuzz conformance
	$(VENV)/bin/mypy python tests benches examples .ci/wheel_contents.py .ci/import_test.py .ci/build_progress.py .ci/check_links.py fuzz
	$(PY) -m mypy.stubtest toolstitch._toolstitch --mypy-config-file pyproject.toml

bench: release
	$(PY) benches/bench_accumulate.py
	$(PY) benches/bench_partial_json.py
	$(PY) benches/bench_assembler_subclass.py
	$(PY) benches/bench_blocks.py
	$(PY) benches/bench_replay.py
	$(PY) benches/compare.py

# The conformance suite (conformance/README.md): its own environment with the package
# (debug build) and the peers it is compared with (dependency group `conformance`),
# every adapter, then RESULTS.md and the chart regenerated.
CONFORMANCE_VENV := .venv-conformance
$(CONFORMANCE_VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(CONFORMANCE_VENV)
	$(CONFORMANCE_VENV)/bin/python -m pip install --quiet --upgrade "pip>=25.1" "maturin>=1.9,<2"
	$(CONFORMANCE_VENV)/bin/python -m pip install --quiet --group conformance
	touch $@

# LlamaIndex's LLMs pin older SDKs: their own environment, merged into the same results.
CONFORMANCE_LI_VENV := .venv-conformance-llamaindex
$(CONFORMANCE_LI_VENV)/.installed: pyproject.toml Makefile
	python3 -m venv $(CONFORMANCE_LI_VENV)
	$(CONFORMANCE_LI_VENV)/bin/python -m pip install --quiet --upgrade "pip>=25.1"
	$(CONFORMANCE_LI_VENV)/bin/python -m pip install --quiet --group conformance-llamaindex
	touch $@

conformance: $(CONFORMANCE_VENV)/.installed $(CONFORMANCE_LI_VENV)/.installed
	MATURIN_PEP517_ARGS="--profile dev" $(CONFORMANCE_VENV)/bin/python -m pip install --quiet \
		--no-build-isolation --editable .
	$(CONFORMANCE_LI_VENV)/bin/python conformance/run.py --impl llamaindex \
		--json $(CONFORMANCE_LI_VENV)/results.json
	$(CONFORMANCE_VENV)/bin/python conformance/run.py --results-md \
		--chart conformance/results.png --json conformance/results.json \
		--merge $(CONFORMANCE_LI_VENV)/results.json

# Release tooling for `make dist`: the dependency group `dist` (ziglang, auditwheel).
$(VENV)/.dist-tools-installed: pyproject.toml $(TOOLS)
	$(PY) -m pip install --quiet --group dist
	touch $@

# An sdist and a stripped release wheel for manylinux2014 (glibc 2.17 and later;
# abi3: CPython 3.10 and later) in dist/. zig is the linker, so the wheel really
# is built against glibc 2.17 whatever this machine has; auditwheel then reads
# the platform tag back from the symbols the wheel uses, and .ci/wheel_contents.py
# checks that the wheel carries the package and nothing else.
dist: $(VENV)/.dist-tools-installed
	rm -rf dist
	$(MATURIN) sdist --out dist
	PATH="$(abspath $(VENV))/bin:$$PATH" $(MATURIN) build --release --strip \
		--zig --compatibility manylinux2014 --out dist
	$(VENV)/bin/auditwheel show dist/*.whl
	$(PY) .ci/wheel_contents.py dist/*.whl

# CI's cheap packaging check: a debug-profile wheel (seconds, from the test build's
# artefacts) through the release's content check.
wheel-check: develop
	rm -rf target/wheel-check
	$(MATURIN) build --quiet --profile dev --out target/wheel-check
	$(PY) .ci/wheel_contents.py target/wheel-check/*.whl

# The API reference, generated from the docstrings and the stubs (pdoc, dependency
# group `docs`) into target/docs; then every link in it and in the Markdown docs is
# checked (.ci/check_links.py).
DOC_MODULES := toolstitch toolstitch.streams toolstitch.messages toolstitch.blocks \
	toolstitch.calls toolstitch.errors toolstitch.tools toolstitch.render toolstitch.replay \
	toolstitch.transport toolstitch.watch toolstitch.guard toolstitch.otel toolstitch.dask \
	toolstitch.proxy toolstitch._toolstitch

docs: develop
	rm -rf target/docs
	$(PY) -m pdoc --docformat markdown -o target/docs $(DOC_MODULES)
	$(PY) .ci/check_links.py target/docs
	@echo "the API reference: target/docs/index.html"

# The sdist alone builds a working wheel from scratch (see .ci/dist-check).
dist-check: $(TOOLS)
	.ci/dist-check

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
	rm -rf target dist $(VENV)
