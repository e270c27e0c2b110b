# hybrid_skin developer entry points (GNU make). From a fresh clone, `make test` is all it takes.
#
#   make .venv   create .venv with the pinned tools of .ci/requirements-dev.txt (Blender as the bpy module)
#   make build   dist/hybrid_skin-<version>.zip, built and validated by Blender's own extension tooling
#   make test    build, then the whole suite on Blender 4.5 LTS: core, Blender (installs the zip) and GPU tests
#   make test-compat  the same suite on Blender 5.2 (Python 3.13), and its Blender-facing tests on 5.0
#                (bpy wheels in .venv-<version>)
#   make test-vulkan  every GPU test (-m gpu) on Blender's Vulkan backend (Mesa lavapipe), Blender 4.5 and 5.2
#   make bench   benchmarks (tests/bench/run.py; `make bench BENCH_ARGS=--record` records the run for the docs;
#                BENCH_VENV=.venv-5.2.3 runs them on Blender 5.2)
#   make tools   regenerate the files generated from code and from the recorded bench run (engine shader
#                ports, docs tables, measured numbers from docs/measured.json; tests check them)
#   make pictures  regenerate the README and docs pictures (tools/make_pictures.py; a few minutes)
#   make demo    python -m hybrid_skin demo
#   make lint    ruff check
#   make clean   remove build outputs and caches (`make distclean` also removes .venv)

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test
MAKEFLAGS += --no-builtin-rules

export PYTHONUNBUFFERED := 1
export PYTHONDONTWRITEBYTECODE := 1
export PIP_DISABLE_PIP_VERSION_CHECK := 1

# The bpy wheel exists for exactly one CPython version: 3.11 for Blender 4.5 LTS (`make test`).
PYTHON_VERSION := 3.11
PYTHON ?= $(shell .ci/find-python $(PYTHON_VERSION) 2>/dev/null || command -v python3)
VENV := .venv
VENV_PYTHON := $(VENV)/bin/python
REQUIREMENTS := .ci/requirements-dev.txt
VENV_STAMP := $(VENV)/.installed

VERSION := $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' blender_manifest.toml)
ZIP := dist/hybrid_skin-$(VERSION).zip

.PHONY: .venv build test test-compat test-vulkan bench demo lint clean distclean tools pictures

.venv: $(VENV_STAMP)

# Re-runs only when the pinned requirements change (or the venv is gone).
$(VENV_STAMP): $(REQUIREMENTS)
	@test -n "$(PYTHON)" || { echo "error: python$(PYTHON_VERSION) not found on PATH" >&2; exit 1; }
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
		|| { echo "error: $(PYTHON) is Python $$($(PYTHON) -V 2>&1), the bpy module needs $(PYTHON_VERSION)" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(VENV_PYTHON) -m pip install --quiet --requirement $(REQUIREMENTS)
	touch $@

build: $(VENV_STAMP)
	$(VENV_PYTHON) .ci/build.py

# pytest exits 5 when it collected nothing; make already fails on it, the message says why.
RUN_PYTEST = HYBRID_SKIN_ZIP="$(CURDIR)/$(ZIP)" $(1) -m pytest $(2) \
	|| { rc=$$?; [ $$rc -ne 5 ] || echo "error: pytest collected no tests" >&2; exit $$rc; }

test: $(VENV_STAMP) build three-js
	$(call RUN_PYTEST,$(VENV_PYTHON),tests)

# The current release (5.2, the first Python 3.13 one in this list) and 5.0, each in its own pinned venv.
COMPAT_VERSIONS := 5.2.3 5.0.1
# Vulkan on the default Blender (.venv) and on the current release.
VULKAN_VENVS := $(VENV) .venv-5.2.3
# bpy 5.1 and later are built for CPython 3.13, 4.2-5.0 for 3.11 (.ci/find-python finds the interpreter).
bpy_python = $(if $(filter 4.% 5.0.%,$(1)),3.11,3.13)

.venv-%/.installed: .ci/requirements-bpy-%.txt
	@python="$$(.ci/find-python $(call bpy_python,$*))" && echo "Blender $* venv with $$python" \
		&& rm -rf .venv-$* && "$$python" -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --requirement $<
	touch $@

# Every version runs even when one fails; the target fails if any did. 5.2 LTS runs the whole suite; 5.0,
# which is no LTS, runs every test that meets Blender (tests/core is numpy alone, and the texture bakes of
# tests/animtex encode with numpy what 4.5 and 5.2 already check Blender's evaluation of), which keeps
# .ci/run within its time on a 2-core machine.
COMPAT_ARGS_5.0 := tests --ignore=tests/core --ignore=tests/animtex
test-compat: build $(foreach v,$(COMPAT_VERSIONS),.venv-$(v)/.installed)
	@failed=""; for v in $(COMPAT_VERSIONS); do \
		case "$$v" in 5.0.*) args="$(COMPAT_ARGS_5.0)"; what="every test that meets Blender";; \
			*) args=tests; what="whole suite";; esac; \
		echo "======== Blender $$v: $$what ========"; \
		( $(call RUN_PYTEST,.venv-$$v/bin/python,$$args) ) || failed="$$failed $$v"; \
	done; \
	if [ -n "$$failed" ]; then echo "error: the suite failed on Blender$$failed" >&2; exit 1; fi

test-vulkan: $(VENV_STAMP) build .venv-5.2.3/.installed
	@failed=""; for venv in $(VULKAN_VENVS); do \
		echo "======== Vulkan: GPU tests on $$($$venv/bin/python -c 'import importlib.metadata as m; print("Blender", m.version("bpy"))') ========"; \
		( HYBRID_SKIN_GPU_BACKEND=vulkan $(call RUN_PYTEST,$$venv/bin/python,tests -m gpu) ) || failed="$$failed $$venv"; \
	done; \
	if [ -n "$$failed" ]; then echo "error: the Vulkan GPU tests failed in$$failed" >&2; exit 1; fi

# BENCH_VENV=.venv-5.2.3 benches Blender 5.2 (D1's Auto is evaluated by Blender there; 4.5 has no Bone Info).
BENCH_VENV ?= $(VENV)
bench: $(VENV_STAMP) $(if $(filter $(VENV),$(BENCH_VENV)),,$(BENCH_VENV)/.installed)
	$(BENCH_VENV)/bin/python tests/bench/run.py $(BENCH_ARGS)

# The demo's crowd page copies three.js from the pinned npm install of the engine tests: installed here
# from tests/engines/package-lock.json when npm is present (for `make demo` and `make test`, whose demo
# tests check the page); without it (or without network) the demo says it skipped the page and does the
# rest, and the tests check that sentence instead.
.PHONY: three-js
three-js:
	@if [ ! -f tests/engines/node_modules/.installed ] && command -v npm >/dev/null; then \
		npm ci --prefix tests/engines --ignore-scripts --no-audit --no-fund \
			&& touch tests/engines/node_modules/.installed \
			|| echo "note: npm ci failed in tests/engines: the demo skips its crowd page"; \
	fi

demo: $(VENV_STAMP) three-js
	$(VENV_PYTHON) -m hybrid_skin demo

tools: $(VENV_STAMP)
	$(VENV_PYTHON) tools/make_ports.py
	$(VENV_PYTHON) tools/docs_tables.py
	$(VENV_PYTHON) tools/docs_figures.py

pictures: $(VENV_STAMP)
	$(VENV_PYTHON) tools/make_pictures.py

lint: $(VENV_STAMP)
	$(VENV_PYTHON) -m ruff check hybrid_skin tests tools .ci

clean:
	rm -rf build dist .pytest_cache .ruff_cache
	find hybrid_skin tests .ci -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) .venv-*/

# ---------------------------------------------------------------------------------------- engines
# make test-engines: the engine runtimes and shader ports (tests/engines; not part of `make test`): the
# three.js runtime in headless Chromium against Blender, the HLSL ports compiled by glslang + spirv-cross
# and the Godot port, run in the browser against numpy, and every glTF export through the Khronos glTF
# Validator. Needs chromium, node + npm, glslangValidator and spirv-cross on PATH (.ci/run installs them);
# three.js, Babylon.js and gltf-validator come pinned from tests/engines/package-lock.json.
ENGINES_DIR := tests/engines
ENGINES_STAMP := $(ENGINES_DIR)/node_modules/.installed

.PHONY: test-engines

$(ENGINES_STAMP): $(ENGINES_DIR)/package.json $(ENGINES_DIR)/package-lock.json
	@command -v node >/dev/null && command -v npm >/dev/null \
		|| { echo "error: node and npm are needed for make test-engines (install Node.js 18 or newer)" >&2; exit 1; }
	npm ci --prefix $(ENGINES_DIR) --ignore-scripts --no-audit --no-fund
	touch $@

test-engines: $(VENV_STAMP) build $(ENGINES_STAMP)
	@for tool in chromium glslangValidator spirv-cross; do command -v $$tool >/dev/null \
		|| { echo "error: $$tool not found (apt-get install chromium glslang-tools spirv-cross)" >&2; exit 1; }; done
	HYBRID_SKIN_ZIP="$(CURDIR)/$(ZIP)" $(VENV_PYTHON) -m pytest $(ENGINES_DIR) \
		|| { rc=$$?; [ $$rc -ne 5 ] || echo "error: pytest collected no engine tests" >&2; exit $$rc; }
