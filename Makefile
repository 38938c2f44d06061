# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
# torch is pinned here (a CPU build is on disk); the package metadata keeps torch>=2.4 for users.
TORCH  ?= torch==2.13.0

.PHONY: run test install install-dev lint typecheck pytest test-slow test-gpu bench bench-peers browser clean korean-model

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install --quiet "$(TORCH)"
	$(BIN)/pip install --quiet -e ".[server,files]"
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(BIN)/pip install --quiet "$(TORCH)" -e ".[dev]"
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

# The server on the default models (multilingual-e5-small, pulled on first use, and the embedded
# all-MiniLM-L6-v2) with the demo collection (Korean and English); it prints the page's URL.
# `make run PORT=8080 HOST=0.0.0.0` serves elsewhere.
PORT ?= 8000
HOST ?= 127.0.0.1
run: install
	$(BIN)/munjang serve --demo --port $(PORT) --host $(HOST)

# Debian's Chromium, its driver and Korean fonts, for the web page's browser test (CI runs this).
BROWSER_PACKAGES := chromium chromium-driver fonts-noto-cjk
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null && fc-list | grep -qi "noto.*cjk"; then \
		echo "browser: chromium and chromedriver are installed"; \
	else \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		( $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q $(BROWSER_PACKAGES) ) \
			|| echo "browser: could not install $(BROWSER_PACKAGES); tests/server/test_web_page.py will be skipped"; \
	fi

lint: install-dev
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: install-dev
	$(BIN)/mypy

pytest: install-dev
	$(BIN)/pytest

test: lint typecheck pytest

test-slow: install-dev
	$(BIN)/pytest -m slow

# The CUDA paths (tests/gpu): on a machine with a GPU.
test-gpu: install-dev
	$(BIN)/pytest -m gpu tests/gpu

# sentence-transformers' OpenVINO backend (optimum-intel) pins an older transformers than munjang's:
# it gets its own environment, which bench/encode.py drives as a peer.
PEERS  ?= .venv-peers

$(PEERS)/.installed:
	$(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/pip install --quiet "$(TORCH)" "sentence-transformers[openvino]==6.2.*" datasets
	$(PEERS)/bin/pip uninstall --yes --quiet torchvision
	touch $@

bench-peers: $(PEERS)/.installed

bench: install-dev bench-peers
	$(BIN)/pip install --quiet "$(TORCH)" -e ".[dev,bench]"
	$(BIN)/python bench/encode.py
	$(BIN)/python bench/train_speed.py

clean:
	rm -rf $(VENV) $(PEERS) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache

# munjang's own Korean model: trains examples/korean_model.yaml (multilingual-e5-small on KorSTS +
# KorNLI; its time is in docs/benchmarks.md) and installs it as munjang-ko-small
# (load_encoder("munjang-ko-small")).
korean-model: install
	$(BIN)/munjang train --config examples/korean_model.yaml --register munjang-ko-small --force
