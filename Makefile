# The README's commands, and the checks CI runs.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: run test lint bench develop release clean

$(PY):
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet "maturin>=1.9,<2"

# Builds the extension into the virtualenv with the test (and lint, bench) extras.
develop: $(PY)
	$(VENV)/bin/maturin develop --quiet --extras test,lint,bench

release: $(PY)
	$(VENV)/bin/maturin develop --quiet --release --features python,bench-baseline --extras test,lint,bench

run: develop
	$(PY) examples/quickstart.py

test: develop
	cargo test --quiet
	$(PY) -m pytest -q

lint: develop
	cargo fmt --check
	cargo clippy --all-targets --features bench-baseline -- -D warnings
	$(VENV)/bin/ruff check python tests benches examples
	$(VENV)/bin/ruff format --check python tests benches examples
	$(VENV)/bin/mypy python tests benches examples

bench: release
	$(PY) benches/bench_accumulate.py
	$(PY) benches/bench_partial_json.py
	$(PY) benches/bench_stream.py
	$(PY) benches/compare.py

clean:
	rm -rf target $(VENV)
