# hybrid_skin developer entry points (GNU make). From a fresh clone, `make test` is all it takes.
#
#   make .venv   create .venv with the pinned tools of .ci/requirements-dev.txt (Blender as the bpy module)
#   make build   dist/hybrid_skin-<version>.zip, built and validated by Blender's own extension tooling
#   make test    build, then the whole suite: core, Blender (installs the zip) and GPU tests
#   make test-compat  the same suite on Blender 4.2.0 and 4.4.0 (bpy wheels in .venv-<version>; not in CI)
#   make bench   benchmarks (tests/bench/run.py)
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

# The bpy wheel exists for exactly one CPython version.
PYTHON_VERSION := 3.11
PYTHON ?= $(shell command -v python$(PYTHON_VERSION) || command -v python3)
VENV := .venv
VENV_PYTHON := $(VENV)/bin/python
REQUIREMENTS := .ci/requirements-dev.txt
VENV_STAMP := $(VENV)/.installed

VERSION := $(shell sed -n 's/^version *= *"\(.*\)"/\1/p' blender_manifest.toml)
ZIP := dist/hybrid_skin-$(VERSION).zip

.PHONY: .venv build test test-compat bench demo lint clean distclean

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
test: $(VENV_STAMP) build
	HYBRID_SKIN_ZIP="$(CURDIR)/$(ZIP)" $(VENV_PYTHON) -m pytest tests \
		|| { rc=$$?; [ $$rc -ne 5 ] || echo "error: pytest collected no tests" >&2; exit $$rc; }

# The oldest supported LTS and the first with slotted actions, each in its own pinned venv.
COMPAT_VERSIONS := 4.2.0 4.4.0

.venv-%/.installed: .ci/requirements-bpy-%.txt
	@test -n "$(PYTHON)" || { echo "error: python$(PYTHON_VERSION) not found on PATH" >&2; exit 1; }
	$(PYTHON) -m venv .venv-$*
	.venv-$*/bin/python -m pip install --quiet --requirement $<
	touch $@

test-compat: build $(foreach v,$(COMPAT_VERSIONS),.venv-$(v)/.installed)
	for v in $(COMPAT_VERSIONS); do \
		echo "== Blender $$v"; \
		HYBRID_SKIN_ZIP="$(CURDIR)/$(ZIP)" .venv-$$v/bin/python -m pytest tests -q || exit $$?; \
	done

bench: $(VENV_STAMP)
	$(VENV_PYTHON) tests/bench/run.py

demo: $(VENV_STAMP)
	$(VENV_PYTHON) -m hybrid_skin demo

lint: $(VENV_STAMP)
	$(VENV_PYTHON) -m ruff check hybrid_skin tests .ci

clean:
	rm -rf build dist .pytest_cache .ruff_cache
	find hybrid_skin tests .ci -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) $(foreach v,$(COMPAT_VERSIONS),.venv-$(v))

# ---------------------------------------------------------------------------------------- engines
# make test-engines: the engine runtimes and shader ports (tests/engines; not part of `make test`): the
# three.js runtime in headless Chromium against Blender, the HLSL ports compiled by glslang + spirv-cross
# and the Godot port, run in the browser against numpy. Needs chromium, node + npm, glslangValidator and
# spirv-cross on PATH (.ci/run installs them); three.js comes pinned from tests/engines/package-lock.json.
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
