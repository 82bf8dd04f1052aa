# Each target does its own set-up: a local virtualenv (.venv) holding the three
# distributions installed editable. The stamp file is refreshed whenever a pyproject changes.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kgpath-installed
PYPROJECTS := pyproject.toml integrations/llama-index/pyproject.toml integrations/langchain/pyproject.toml

.PHONY: setup demo test bench lint clean

setup: $(STAMP)

$(STAMP): $(PYPROJECTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[local,nlp,openai,tokens,yaml,plot,graphdb,neo4j,falkordb,dev]" \
		-e "integrations/llama-index[test]" -e "integrations/langchain[test]"
	touch $(STAMP)

demo: setup
	$(VENV)/bin/kgpath demo

test: setup
	$(PY) -m pytest tests integrations/llama-index/tests integrations/langchain/tests

bench: setup
	$(PY) benchmarks/run_all.py

lint: setup
	$(VENV)/bin/ruff check src integrations tests benchmarks cookbook
	$(VENV)/bin/mypy src/kgpath integrations/langchain/langchain_kgpath
	cd integrations/llama-index && ../../$(VENV)/bin/mypy --explicit-package-bases -p llama_index.retrievers.kgpath

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
