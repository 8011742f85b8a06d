# The two commands of the README, and the rest of the workflow. Each target sets up what it
# needs on a fresh machine (a virtualenv in .venv with the Python dependencies, the Rust
# extension built by maturin); only Python 3.11+ and a Rust toolchain must be installed.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
STAMP  := $(VENV)/.deps-installed
OUT    ?= out

.PHONY: help setup build demo test lint test-rust test-python test-fuzz fuzz fuzz-setup fuzz-unpack validate tcp-fidelity westwood-nj bench bench-aqm speed plugin-speed wheel wheel-check sweep-bench memory clean kernel-table sctp-validate quicpeer quic-table

help:
	@echo "make demo      set up, then run the main job: the paper reproductions, the validation report and example runs into $(OUT)/"
	@echo "make test      set up, then run every test (Rust and Python, slow validation included, a bounded fuzzing run) after make lint"
	@echo "make lint      rustfmt, clippy (warnings as errors) and ruff"
	@echo "make validate  TCP against Padhye and Mathis (both timer modes), MPTCP against RFC 6356 -> docs/reports/validation*.md, docs/reports/mptcp.md"
	@echo "make sctp-validate  SCTP against Padhye and TCP, failover, CMT with and without SFR/CUC/DAC, receive-buffer blocking -> docs/reports/sctp.md (~10 s)"
	@echo "make tcp-fidelity  loss-free Reno, LIA, OLIA on long deep-buffered paths vs the sawtooth model -> docs/reports/tcp_fidelity.md (~2 min)"
	@echo "make westwood-nj  Reno, Westwood+ and TCP New Jersey under random loss and congestion warning -> docs/reports/westwood_new_jersey.md"
	@echo "make bench     mpsim beside ns-3 on the same dumbbells -> benches/results/ (installs ns-3, ~1 min)"
	@echo "make bench-aqm  CoDel, FQ-CoDel, RED and PIE beside ns-3's on a dumbbell, without and with ECN -> benches/results/aqm_ns3.md (~5 min)"
	@echo "make speed     core speed (delivered packets per wall second) -> benches/results/speed.md"
	@echo "make plugin-speed  a scheduler and a controller written in Python against the Rust ones -> benches/results/plugin_speed.md"
	@echo "make wheel     the wheel, with the link emulator of mpsim kernel inside -> dist/"
	@echo "make wheel-check   the built wheel in a fresh virtualenv outside the checkout (also part of make test) -> docs/reports/wheel_check.md"
	@echo "make sweep-bench  sweep scaling (local processes, Dask) and parent memory -> benches/results/sweep_scaling.md"
	@echo "make memory    estimated against measured peak memory of large runs -> benches/results/memory.md"
	@echo "make fuzz      coverage-guided fuzzing of the scenario reader and of whole runs (FUZZ_TIME=$(FUZZ_TIME) s each)"
	@echo "make quicpeer  the Multipath QUIC peer (noq) that mpsim kernel runs for QUIC flows -> target/release/mpsim-quicpeer"
	@echo "make quic-table  (root) scenarios/kernel_quic/ on noq beside mpsim's QUIC -> benches/results/quic_real.md (~6 min)"
	@echo "make kernel-table  (root) scenarios/kernel/ on Linux TCP/MPTCP beside mpsim -> docs/reports/kernel-results.md (~25 min)"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "mpsim needs Python 3.11 or newer; $(PYTHON) is $$($(PYTHON) --version 2>&1). Use make PYTHON=python3.11 ..."; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet "maturin>=1.5,<2" "pandas>=2.0" "pyarrow>=14" "tqdm>=4.60" "matplotlib>=3.7" "pytest>=7" "hypothesis>=6" \
		"dask[distributed]>=2024.1" "duckdb>=1.0" "ruff>=0.6" "mypy>=1.18"
	touch $@

setup: $(STAMP)

build: setup
	$(BIN)/maturin develop --release --quiet
	cargo build --release --quiet -p mpsim-linkemu

demo: build
	mkdir -p $(OUT)
	$(BIN)/mpsim reproduce all --out $(OUT)
	$(BIN)/python -m mpsim.validate.tcp --out $(OUT)/validation.md > /dev/null
	$(BIN)/mpsim run scenarios/validation/dumbbell_2x10m_loss1.toml --out $(OUT)/dumbbell_2x10m_loss1 --plot $(OUT)/dumbbell_2x10m_loss1.png
	$(BIN)/mpsim run scenarios/validation/dumbbell_10x100m_loss0.toml --out $(OUT)/dumbbell_10x100m_loss0 --plot $(OUT)/dumbbell_10x100m_loss0.png
	@echo "results in $(OUT)/: one folder per reproduced paper (report.md, figures, data), validation.md, example runs"
	@echo "the mpsim command is in $(BIN): run '. $(BIN)/activate' to put it on your PATH"

test-rust:
	cargo test -p mpsim-core -p mpsim-linkemu -p mpsim-py --quiet

test-python: build
	$(BIN)/python -m pytest -q

# every test, fuzzing for a bounded time included (test-fuzz below); CI runs this on a fresh
# machine (.ci/run). The QUIC peer is built first so that the side-by-side runs of
# tests/test_kernel_quic.py take place where the machine allows them (root, TUN).
test: lint test-rust quicpeer test-python test-fuzz

# the house style, checked: rustfmt (width in rustfmt.toml), clippy with warnings as errors
# (the workspace and the fuzz crate), ruff (rules in pyproject.toml), and mypy's stubtest of
# python/mpsim/_core.pyi against the built module; `cargo fmt --all` and `ruff check --fix`
# repair most of what they find
lint: build
	cargo fmt --all --check
	cd fuzz && cargo fmt --check
	cargo fmt --manifest-path crates/mpsim-quicpeer/Cargo.toml --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo clippy --quiet -- -D warnings
	$(BIN)/ruff check --quiet python tests benches
	$(BIN)/python -m mypy.stubtest mpsim._core --allowlist tests/stubtest-allowlist.txt

# Coverage-guided fuzzing with cargo fuzz (libFuzzer). The fuzz crate in fuzz/ is its own
# workspace. libFuzzer's instrumentation flags are nightly-only, so the stable toolchain is
# told to accept them (RUSTC_BOOTSTRAP=1); -a keeps debug assertions and overflow checks in
# the optimised build; -s none: the code is safe Rust, AddressSanitizer would only slow it.
FUZZ       := RUSTC_BOOTSTRAP=1 cargo fuzz
FUZZ_FLAGS := -a -s none
FUZZ_ARGS  := -rss_limit_mb=2048 -timeout=20 -print_final_stats=1
FUZZ_TIME  ?= 600
# What test-fuzz adds to a fresh machine's make test, measured on the shared 2-core machine
# (load average about 9): cargo install cargo-fuzz 1 min 43 s, building both targets and
# fuzzing each 30 s from 400 inputs 3 min 21 s; about 5 min in all, beside about 6 min for the
# rest of make test
FUZZ_CI_TIME ?= 30
# inputs of the kept corpus CI starts from (file names are hashes: an arbitrary sample);
# loading all of run_scenario's takes about a minute before fuzzing starts
FUZZ_CI_SEEDS ?= 400
FUZZ_TARGETS := parse_scenario run_scenario

fuzz-setup:
	@cargo fuzz --version >/dev/null 2>&1 || cargo install cargo-fuzz --locked

# the kept corpus is one archive per target (fuzz/corpus/TARGET.tar.gz); its folder
# fuzz/corpus/TARGET/ (ignored by git) is unpacked from it when missing
fuzz-unpack:
	@for t in $(FUZZ_TARGETS); do \
		[ -d fuzz/corpus/$$t ] || tar -xzf fuzz/corpus/$$t.tar.gz -C fuzz/corpus || exit $$?; \
	done

# bounded run for CI: FUZZ_CI_TIME seconds per target from FUZZ_CI_SEEDS inputs of the kept
# corpus and the inputs of fixed crashes (fuzz/regressions/, both left unchanged); a crash fails the build and leaves
# its input in fuzz/artifacts/
test-fuzz: fuzz-setup fuzz-unpack
	@for t in $(FUZZ_TARGETS); do \
		tmp=$$(mktemp -d) && log=$$(mktemp) && \
		ls fuzz/corpus/$$t | head -n $(FUZZ_CI_SEEDS) | sed "s|^|fuzz/corpus/$$t/|" | xargs cp -t $$tmp && \
		$(FUZZ) run $(FUZZ_FLAGS) $$t $$tmp $$(ls -d fuzz/regressions/$$t 2>/dev/null) \
			-- $(FUZZ_ARGS) -max_total_time=$(FUZZ_CI_TIME) > $$log 2>&1; \
		status=$$?; \
		grep -E "^(Done|stat::number_of_executed_units)" $$log | sed "s/^/fuzz $$t: /"; \
		[ $$status -eq 0 ] || tail -60 $$log; \
		rm -rf $$tmp $$log; \
		[ $$status -eq 0 ] || exit $$status; \
	done

# longer run: new inputs are added to the kept corpus, the corpus is minimised and packed
# again (a reproducible archive: sorted names, no times or owners)
fuzz: fuzz-setup fuzz-unpack
	@for t in $(FUZZ_TARGETS); do \
		$(FUZZ) run $(FUZZ_FLAGS) $$t fuzz/corpus/$$t -- $(FUZZ_ARGS) -max_total_time=$(FUZZ_TIME) || exit $$?; \
		$(FUZZ) cmin $(FUZZ_FLAGS) $$t fuzz/corpus/$$t || exit $$?; \
		tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C fuzz/corpus -cf - $$t | gzip -n -9 > fuzz/corpus/$$t.tar.gz || exit $$?; \
	done

validate: build
	$(BIN)/python -m mpsim.validate.tcp --out docs/reports/validation.md > /dev/null
	# informative: with RFC 6298's 1 s T0, Padhye's timeout term misses the target (see the report)
	-$(BIN)/python -m mpsim.validate.tcp --rto rfc6298 --out docs/reports/validation_rfc6298.md > /dev/null
	$(BIN)/python -m mpsim.validate.mptcp --out docs/reports/mptcp.md
	$(BIN)/python -m mpsim.validate.mptcp_rec --out docs/reports/mptcp_rec.md

sctp-validate: build
	$(BIN)/python -m mpsim.validate.sctp --out docs/reports/sctp.md > /dev/null

tcp-fidelity: build
	$(BIN)/python -m mpsim.validate.tcp_fidelity --out docs/reports/tcp_fidelity.md

westwood-nj: build
	$(BIN)/python -m mpsim.validate.westwood_new_jersey --out docs/reports/westwood_new_jersey.md

bench: build
	$(BIN)/python benches/compare_ns3.py

bench-aqm: build
	$(BIN)/python benches/compare_ns3_aqm.py

kernel-table: build
	$(BIN)/python -m mpsim.kernel.report --out docs/reports/kernel-results.md --repeat 3

# The Multipath QUIC peer of `mpsim kernel` (noq): its own workspace, outside the default build.
quicpeer:
	cargo build --release --quiet --manifest-path crates/mpsim-quicpeer/Cargo.toml --target-dir target
	cargo test --release --quiet --manifest-path crates/mpsim-quicpeer/Cargo.toml --target-dir target
	cargo clippy --release --quiet --manifest-path crates/mpsim-quicpeer/Cargo.toml --target-dir target --all-targets -- -D warnings

quic-table: build quicpeer
	$(BIN)/python benches/quic_real.py --repeat 3 --out benches/results/quic_real.md

speed:
	$(PYTHON) benches/speed.py $$(command -v valgrind >/dev/null && echo --instructions)

plugin-speed: build
	$(BIN)/python benches/plugin_speed.py

wheel: build
	install -D -m 755 target/release/mpsim-linkemu python/mpsim/kernel/bin/mpsim-linkemu
	$(BIN)/maturin build --release --quiet -o dist

wheel-check: build
	$(BIN)/python tests/wheel_check.py --out docs/reports/wheel_check.md

sweep-bench: build
	$(BIN)/python benches/sweep_scaling.py

memory: build
	$(BIN)/python benches/memory.py

clean:
	rm -rf $(VENV) target $(OUT)
