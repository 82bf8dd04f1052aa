# Each target does its own set-up: a local virtualenv (.venv) holding the three
# distributions installed editable. The stamp file is refreshed whenever a pyproject changes.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.kgpath-installed
PYPROJECTS := pyproject.toml integrations/llama-index/pyproject.toml integrations/langchain/pyproject.toml

.PHONY: setup demo test bench lint docs clean

setup: $(STAMP)

$(STAMP): $(PYPROJECTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[local,nlp,openai,tokens,yaml,plot,graphdb,neo4j,falkordb,dev,docs]" \
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

# The HTML site in site/: mkdocs.yml, docs/ (pages take README/ARCHITECTURE text through
# docs/hooks.py) and the API reference from the docstrings; any warning fails the build.
docs: setup
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) site .pytest_cache .ruff_cache .mypy_cache
