# The two commands: `make demo` runs the main job (envtrain demo, CPU, about 15 minutes), `make test` runs the tests.
# Both set up .venv on first use (CPU torch first, then the package), so a fresh clone needs nothing else.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# CPU build of torch first: a bare `torch` requirement resolves to a multi-GB CUDA build.
	# On GPU nodes use `pip install -e .[gpu]` against your CUDA torch instead.
	$(BIN)/pip install --quiet "torch==2.13.0"
	$(BIN)/pip install --quiet -e ".[test]"
	# BFCL ships its data and API classes in the wheel; its declared dependencies (API clients,
	# sentence-transformers, faiss, a numpy pin) are not needed to run its executor and checker.
	$(BIN)/pip install --quiet --no-deps "bfcl-eval==2026.3.23"
	# DeepSpeed for the ZeRO-3 test on CPU: no ops prebuilt (the one the test needs compiles on first use,
	# about 100 s, cached under ~/.cache/envtrain/torch_extensions).
	DS_BUILD_OPS=0 $(BIN)/pip install --quiet "deepspeed>=0.19,<0.20"
	touch $(STAMP)

demo: setup
	$(BIN)/envtrain demo --out demo-out

test: setup
	$(BIN)/python -m pytest tests

bench: setup
	$(BIN)/python benchmarks/core_latency.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
