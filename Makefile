# The two commands of the README, and the rest of the workflow. Each target sets up what it
# needs on a fresh machine (a virtualenv in .venv with the Python dependencies, the Rust
# extension built by maturin); only Python 3.10+ and a Rust toolchain must be installed.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
STAMP  := $(VENV)/.deps-installed
OUT    ?= out

.PHONY: help setup build demo test test-rust test-python validate bench speed clean kernel-table

help:
	@echo "make demo      set up, then run the main job: the paper reproductions, the validation report and example runs into $(OUT)/"
	@echo "make test      set up, then run every test (Rust and Python, slow validation included)"
	@echo "make validate  TCP against Padhye and Mathis, MPTCP against RFC 6356 -> docs/validation.md, docs/mptcp.md"
	@echo "make bench     mpsim beside ns-3 on the same dumbbells -> benches/results/ (installs ns-3, ~1 min)"
	@echo "make speed     core speed (delivered packets per wall second) -> benches/results/speed.md"
	@echo "make kernel-table  (root) scenarios/kernel/ on Linux TCP/MPTCP beside mpsim -> docs/kernel-results.md (~25 min)"

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "maturin>=1.5,<2" "pandas>=2.0" "pyarrow>=14" "tqdm>=4.60" "matplotlib>=3.7" "pytest>=7" "hypothesis>=6"
	touch $@

setup: $(STAMP)

build: setup
	$(BIN)/maturin develop --release --quiet
	cargo build --release --quiet -p mpsim-linkemu

demo: build
	mkdir -p $(OUT)
	$(BIN)/mpsim reproduce all --out $(OUT)
	$(BIN)/python -m mpsim.validation --out $(OUT)/validation.md > /dev/null
	$(BIN)/mpsim run scenarios/validation/dumbbell_2x10m_loss1.toml --out $(OUT)/dumbbell_2x10m_loss1 --plot $(OUT)/dumbbell_2x10m_loss1.png
	$(BIN)/mpsim run scenarios/validation/dumbbell_10x100m_loss0.toml --out $(OUT)/dumbbell_10x100m_loss0 --plot $(OUT)/dumbbell_10x100m_loss0.png
	@echo "results in $(OUT)/: one folder per reproduced paper (report.md, figures, data), validation.md, example runs"

test-rust:
	cargo test -p mpsim-core -p mpsim-linkemu --quiet

test-python: build
	$(BIN)/python -m pytest -q

test: test-rust test-python

validate: build
	$(BIN)/python -m mpsim.validation --out docs/validation.md
	$(BIN)/python -m mpsim.mptcp_report --out docs/mptcp.md

bench: build
	$(BIN)/python benches/compare_ns3.py

kernel-table: build
	$(BIN)/python -m mpsim.kernel_report --out docs/kernel-results.md --repeat 3

speed:
	$(PYTHON) benches/speed.py

clean:
	rm -rf $(VENV) target $(OUT)
