# isthmus: the two commands a new user needs are `make demo` and `make test`.
# Both install what they need (scripts/install-deps.sh) and build first.

BUILD ?= build
JOBS  ?= 2
PY    := .venv/bin/python

.PHONY: all deps build test test-c test-py lint check-results demo bench-overhead clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

lint: deps
	$(PY) -m ruff check python tests tools scripts
	$(PY) -m ruff format --check python tests tools scripts
	$(PY) -m mypy
	.venv/bin/lint-imports --no-cache

# Every rendered table agrees with its results file; every results file has its header.
# (Built first: the selector's tables run its model, build/bin/isthmus-coll-model.)
check-results: build
	$(PY) -m isthmus experiment render --check

test-c: build
	cd $(BUILD) && ctest --output-on-failure

# One test at a time. Two at a time (pytest -n 2 --dist loadgroup -m "not serial", then
# -m serial) took 503-602 s + 251-263 s instead of 939-968 s, but five gates in a row each
# saw a different test fail under the load (a CPU share, a 10 s bound, Open MPI's mpirun
# crashing while it aborted a job): not yet a suite that never flakes.
test-py: build
	$(PY) -m pytest --durations=20 --junitxml=$(BUILD)/pytest.xml tests/python

# lint, the tables' check and ctest side by side (25 s one after the other), then pytest.
test:
	@$(MAKE) --no-print-directory -j3 lint check-results test-c
	@$(MAKE) --no-print-directory test-py

demo: build
	@scripts/demo.sh

# The overhead benchmark of the profiling layer (results/overhead/): an experiment.
bench-overhead: build
	bin/isthmus experiment run overhead/overhead
	bin/isthmus experiment render

clean:
	rm -rf $(BUILD)
