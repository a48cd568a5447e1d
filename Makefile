# `make test` and `make demo` are the two commands a fresh clone needs.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: test demo venv bench clean schema

venv: $(STAMP)

$(STAMP): pyproject.toml setup.py
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q -p no:cacheprovider; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo 'pytest collected no tests: that is a failure here'; exit 1; fi; exit $$rc

demo: $(STAMP)
	$(BIN)/lens hardware list
	$(BIN)/lens hardware resolve --label llm-d.ai/accelerator-variant=gpu --label llm-d.ai/accelerator-vendor=amd
	$(BIN)/lens hardware resolve --resource nvidia.com/mig-1g.10gb
	$(BIN)/lens hardware resolve --device-class gpu.intel.com
	$(BIN)/lens hardware resolve --resource example.com/unknown-accelerator
	$(BIN)/lens hardware doctor
	$(BIN)/lens cluster inspect --demo --nodes

schema: $(STAMP)
	$(BIN)/python -m llm_d_lens.hardware.schema --write

bench: $(STAMP)
	$(BIN)/python bench/startup.py

clean:
	rm -rf $(VENV) build *.egg-info
