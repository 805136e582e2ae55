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

# Two tests at a time (pytest-xdist), then the `serial` ones alone: those that time the
# network or act on every network of the machine (pyproject.toml). Measured on 2 cores:
# the first 565 tests took 650 s one at a time and 532 s two at a time.
test-py: build
	$(PY) -m pytest -n 2 --dist loadgroup -m "not serial" --durations=20 --junitxml=$(BUILD)/pytest.xml tests/python
	$(PY) -m pytest -m serial --durations=10 --junitxml=$(BUILD)/pytest-serial.xml tests/python

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
