# `make test` and `make demo` are the two commands a fresh clone needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# what `make demo` writes rather than prints (a full render); ours, so replaced on each run
DEMO_OUT ?= build/demo

.PHONY: test demo venv bench clean generate screenshots

venv: $(STAMP)

$(STAMP): pyproject.toml setup.py
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	PYTHONWARNINGS='ignore:Editable installation' $(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check --quiet llm_d_lens bench examples
	$(BIN)/python -m pytest -q -p no:cacheprovider; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo 'pytest collected no tests: that is a failure here'; exit 1; fi; exit $$rc

demo: $(STAMP)
	$(BIN)/lens hardware list
	$(BIN)/lens hardware resolve --label llm-d.ai/accelerator-variant=gpu --label llm-d.ai/accelerator-vendor=amd
	$(BIN)/lens hardware resolve --resource nvidia.com/mig-1g.10gb
	$(BIN)/lens hardware resolve --device-class gpu.intel.com
	$(BIN)/lens hardware resolve --resource example.com/unknown-accelerator
	$(BIN)/lens hardware doctor
	$(BIN)/lens evaluate config --hardware intel-xpu --tensor-parallel 2
	$(BIN)/lens evaluate config --hardware intel-i915
	$(BIN)/lens profiles list
	$(BIN)/lens profiles validate
	$(BIN)/lens driver plan --offline --device-class gpu.nvidia.com --device-class dra.cpu --resource google.com/tpu
	$(BIN)/lens driver install --hardware amd --mode dra --dry-run
	@echo '# expected refusal: an unsupported device class is refused before anything runs'; \
	if out=$$($(BIN)/lens driver plan --offline --device-class npu.rebellions.ai 2>&1); then echo "$$out"; exit 1; \
	else echo "$$out" | sed 's/^error: /refused (as expected): /'; fi
	@root="$${LENS_LLM_D_ROOT:-$${LLM_D_ROOT:-../shared/upstream/llm-d}}"; \
	if [ ! -d "$$root/guides" ]; then echo "lens deploy: skipped, no llm-d checkout at $$root (set LENS_LLM_D_ROOT)"; \
	else set -x; $(BIN)/lens deploy guides --llm-d-root "$$root" --guide optimized-baseline || exit 1; \
	if ! command -v kubectl >/dev/null 2>&1 && ! command -v kustomize >/dev/null 2>&1; then \
	  set +x; echo "lens deploy render: skipped, neither kubectl nor kustomize is installed"; \
	else $(BIN)/lens deploy render --llm-d-root "$$root" --guide optimized-baseline --hardware rocm --mode dra \
	  --pci-allow 0000:c1:00.0 --pci-allow 0000:c2:00.0 >/dev/null || exit 1; \
	mkdir -p $(DEMO_OUT); $(BIN)/lens deploy render --llm-d-root "$$root" --guide optimized-baseline --hardware xpu --mode plugin \
	  --output-file $(DEMO_OUT)/xpu-plugin.yaml --force || exit 1; set +x; \
	echo "the full render is in $(DEMO_OUT)/xpu-plugin.yaml ($$(grep -c '^kind:' $(DEMO_OUT)/xpu-plugin.yaml) objects)"; fi; fi
	$(BIN)/lens telemetry devices --snapshot llm_d_lens/monitoring/accelerator/testdata/amd-cpx-partitions.prom --hardware amd
	@mkdir -p $(DEMO_OUT); $(BIN)/lens telemetry queries --hardware nvidia --output json > $(DEMO_OUT)/nvidia-queries.json && \
	echo "lens telemetry queries --hardware nvidia -o json: $$(grep -c '\": \"' $(DEMO_OUT)/nvidia-queries.json) PromQL queries, written to $(DEMO_OUT)/nvidia-queries.json"
	$(BIN)/lens cluster inspect --demo --nodes
	$(BIN)/lens plan --model llama-3.1-70b --demo --concurrency 16

# every generated file (schema.json, docs/cli.md, the shipped PrometheusRule, the planning table), from its sources
generate: $(STAMP)
	$(BIN)/python -m llm_d_lens.generate

# Every bench/*.py that is not a test (or test support), in name order: a new benchmark is picked up as it lands.
BENCH_SCRIPTS = $(sort $(filter-out bench/test_% bench/conftest.py bench/__init__.py,$(wildcard bench/*.py)))

bench: $(STAMP)
	@for script in $(BENCH_SCRIPTS); do echo "== $$script"; $(BIN)/python "$$script" || exit 1; done

clean:
	rm -rf $(VENV) build *.egg-info

# the README's console screenshots: the browser test writes them to build/screenshots (make test never
# touches a tracked file); this copies them over docs/images
screenshots: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider llm_d_lens/console/test_browser.py -k screenshots
	cp build/screenshots/console-overview.png build/screenshots/console-accelerators.png docs/images/
