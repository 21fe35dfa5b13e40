# icefloe: build, run, test and package.
#
#   make build             bin/icefloe
#   make serve             build, then `icefloe serve --demo` (extra flags: ARGS="--workers 3")
#   make test              the whole suite: test-go, then test-integration (what CI runs)
#   make test-go           go mod download, go vet, go test over every package but integration/
#   make test-integration  the end-to-end suites (see below)
#   make fuzz              short fuzz runs of every Fuzz target (FUZZTIME=20s each)
#   make bench             benchmarks of the packages that have any (BENCH=., BENCH_COUNT=1)
#   make bench-tpch        TPC-H vs DuckDB, pyiceberg and Spark (SF=1); rewrites docs/benchmarks.md's TPC-H sections
#   make bench-tpch-s3     TPC-H with the tables on S3 (versitygw), cold and warm data caches, vs DuckDB (SF=1)
#   make bench-latency     SELECT 1, count(*), point filter, GROUP BY, a dashboard tile (result cache on/off) through Python ADBC vs DuckDB in-process: p50/p99, ratio; then the fixed-cost profile (BenchmarkFixedCost)
#   make bench-tpcds       TPC-DS's 99 queries through Python ADBC (TPCDS_SF=1): per-query ratio to DuckDB, median cost above it
#   make bench-sidebyside  TPC-H SF10, TPC-DS SF1+10 vs DuckDB, 1 and 2 pinned workers: bytes moved, CPU, projection
#   make bench-load        coordinator + 2 workers under 16 clients for 60 s, then with a cross join; rewrites docs/benchmarks.md's load section
#   make bench-soak        coordinator + 2 workers under 8 writing clients for 10 min: every process's live-heap slope (MB/min); rewrites docs/benchmarks.md's soak section
#   make docker            the container image (DOCKER_IMAGE=icefloe:dev)
#   make image             the same image without a daemon or registry: buildah, FROM scratch
#   make clean             remove build output; distclean also removes installed test tools
#
# Every go build, vet and test runs with -tags $(GO_TAGS): DuckDB's Arrow
# interface is compiled only with that tag.

GO_TAGS := duckdb_arrow

GO           ?= go
BIN          := bin/icefloe
ARGS         ?=
TEST_TIMEOUT ?= 30m
FUZZTIME     ?= 20s
BENCH        ?= .
BENCH_COUNT  ?= 1
DOCKER       ?= docker
DOCKER_IMAGE ?= icefloe:dev

# DuckDB is C++ behind cgo.
export CGO_ENABLED := 1

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

# Packages whose tests test-go runs: all but integration/, which
# test-integration runs against the built binary.
go_packages = $$($(GO) list -tags $(GO_TAGS) ./... | grep -Ev '/integration(/|$$)')

.PHONY: build serve deps vet test test-go test-integration test-integration-go \
	test-integration-suites fuzz bench bench-tpch bench-tpch-s3 bench-latency bench-tpcds bench-sidebyside bench-load bench-soak tpch-sf0.1 docker image clean distclean

# VERSION is what icefloe --version prints (the commit when no tag).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)

build:
	$(GO) build -tags $(GO_TAGS) -ldflags "-X main.buildVersion=$(VERSION)" -o $(BIN) ./cmd/icefloe

serve: build
	$(BIN) serve --demo $(ARGS)

deps:
	$(GO) mod download

vet: deps
	$(GO) vet -tags $(GO_TAGS) ./...

# The test target runs the two halves in order (not in parallel under -j).
test:
	@$(MAKE) --no-print-directory test-go
	@$(MAKE) --no-print-directory test-integration

test-go: vet
	$(GO) test -tags $(GO_TAGS) -count=1 -timeout $(TEST_TIMEOUT) $(go_packages)

# ---- integration hook -------------------------------------------------------
# test-integration = the Go suites in integration/ (in-process clusters,
# ADBC) + every suite directory integration/<name>/ that has an executable
# `run` script (Python ADBC, JDBC, pyiceberg, ...), in name order.
#
# A suite's `run` is started in its own directory with ICEFLOE_BIN (the
# absolute path of the freshly built binary), REPO_ROOT and GO_TAGS set. It
# installs what it needs itself and must be idempotent and quick when that is
# already installed: scripts/ensure-venv for a Python virtualenv (e.g.
# integration/.venv, reinstalled only when requirements change) and
# scripts/fetch-maven for jars (cached in integration/.m2). It exits non-zero
# on failure, and must fail rather than pass when it collects no test.
test-integration:
	@$(MAKE) --no-print-directory test-integration-go
	@$(MAKE) --no-print-directory test-integration-suites

test-integration-go: build
	@if [ -n "$$(find integration -name '*_test.go' -not -path '*/.*' -print -quit 2>/dev/null)" ]; then \
	  echo "ICEFLOE_BIN=$(abspath $(BIN)) $(GO) test -tags $(GO_TAGS) -count=1 -timeout $(TEST_TIMEOUT) ./integration/..."; \
	  ICEFLOE_BIN=$(abspath $(BIN)) $(GO) test -tags $(GO_TAGS) -count=1 -timeout $(TEST_TIMEOUT) ./integration/...; \
	else \
	  echo "test-integration-go: no Go integration tests"; \
	fi

test-integration-suites: build
	@shopt -s nullglob; ran=0; \
	for run in integration/*/run; do \
	  [ -x "$$run" ] || continue; \
	  dir=$$(dirname "$$run"); \
	  echo "== integration suite $$dir"; \
	  ( cd "$$dir" && ICEFLOE_BIN=$(abspath $(BIN)) REPO_ROOT=$(CURDIR) GO_TAGS=$(GO_TAGS) ./run ); \
	  ran=$$((ran + 1)); \
	done; \
	echo "test-integration-suites: $$ran suite(s) run"

# ---- fuzzing and benchmarks ---------------------------------------------------

# Each Fuzz target of each package, one after another, FUZZTIME each.
fuzz:
	@dirs=$$(grep -rl --include='*_test.go' --exclude-dir='.?*' '^func Fuzz' . | xargs -r -n1 dirname | sort -u || true); \
	if [ -z "$$dirs" ]; then echo "fuzz: no Fuzz targets"; exit 0; fi; \
	for dir in $$dirs; do \
	  for fn in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$$dir"/*_test.go | sed 's/^func //' | sort -u); do \
	    echo "$(GO) test -tags $(GO_TAGS) -run '^\$$' -fuzz '^$$fn\$$' -fuzztime $(FUZZTIME) $$dir"; \
	    $(GO) test -tags $(GO_TAGS) -run '^$$' -fuzz "^$$fn\$$" -fuzztime $(FUZZTIME) "$$dir"; \
	  done; \
	done

# Benchmarks of the packages that have any; compare runs with benchstat
# (BENCH_COUNT=10 make bench > new.txt), never assert on time.
bench:
	@dirs=$$(grep -rl --include='*_test.go' --exclude-dir='.?*' '^func Benchmark' . | xargs -r -n1 dirname | sort -u || true); \
	if [ -z "$$dirs" ]; then echo "bench: no benchmarks yet"; exit 0; fi; \
	echo "$(GO) test -tags $(GO_TAGS) -run '^$$' -bench '$(BENCH)' -benchmem -count $(BENCH_COUNT)" $$dirs; \
	$(GO) test -tags $(GO_TAGS) -run '^$$' -bench '$(BENCH)' -benchmem -count $(BENCH_COUNT) $$dirs
	@$(MAKE) --no-print-directory bench-tpch

# TPC-H (bench/tpch): generates SF with tpchgen-cli (cached in
# integration/.tpch-data), runs icefloe and its peers, writes
# bench/tpch/out/results-sf$(SF).json, then docs/benchmarks.md's TPC-H
# sections and docs/benchmarks-tpch.png. Reported, never asserted, except
# that a wrong TPC-H answer fails it.
SF ?= 1
bench-tpch: build
	scripts/ensure-venv integration/.venv-bench bench/tpch/requirements.txt bench/requirements.txt
	ICEFLOE_BIN=$(abspath $(BIN)) integration/.venv-bench/bin/python bench/tpch/bench.py --sf $(SF)
	integration/.venv-bench/bin/python bench/tpch/report.py bench/tpch/out/results-sf$(SF).json

# The same TPC-H queries with every table on S3 (a versitygw gateway on this
# machine, installed by scripts/ensure-versitygw): each query cold on a
# fresh server with empty caches, then warm; prints the table of
# docs/benchmarks.md's "TPC-H on S3" and writes
# bench/tpch/out/results-sf$(SF)-s3.json.
bench-tpch-s3: build
	scripts/ensure-venv integration/.venv-tpch bench/tpch/requirements.txt
	ICEFLOE_BIN=$(abspath $(BIN)) integration/.venv-tpch/bin/python bench/tpch/bench.py --sf $(SF) --s3

# Per-query latency floor (bench/latency.py): p50/p99 of SELECT 1, count(*),
# a point filter and a one-file aggregate through Python ADBC, next to
# DuckDB in-process on the same Parquet file.
bench-latency: build
	scripts/ensure-venv integration/.venv-tpch bench/tpch/requirements.txt
	GO_TAGS=$(GO_TAGS) ICEFLOE_BIN=$(abspath $(BIN)) integration/.venv-tpch/bin/python bench/latency.py

# TPC-DS (bench/tpcds): DuckDB's tpcds extension generates SF TPCDS_SF
# (cached in bench/tpcds/out/data) and its 99 queries; each runs through
# Python ADBC, checked against DuckDB on the same Parquet files, then timed
# alternating with DuckDB in-process: each query's ratio to DuckDB, the
# total ratio, the queries above 2x and 3x, the median cost above DuckDB.
TPCDS_SF ?= 1
bench-tpcds: build
	scripts/ensure-venv integration/.venv-tpcds bench/tpcds/requirements.txt
	ICEFLOE_BIN=$(abspath $(BIN)) integration/.venv-tpcds/bin/python bench/tpcds/bench.py --sf $(TPCDS_SF)

# Side by side (bench/sidebyside): TPC-H at SIDE_TPCH_SF and TPC-DS at
# SIDE_TPCDS_SF, each with 1 and 2 workers pinned to their own cores
# (taskset), next to DuckDB on the same Parquet files in the same run;
# rewrites docs/benchmarks.md's side-by-side section. Reported, never asserted.
SIDE_TPCH_SF ?= 10
SIDE_TPCDS_SF ?= 1,10
bench-sidebyside: build
	scripts/ensure-venv integration/.venv-sidebyside bench/sidebyside/requirements.txt
	ICEFLOE_BIN=$(abspath $(BIN)) integration/.venv-sidebyside/bin/python bench/sidebyside/bench.py \
		--tpch-sf $(SIDE_TPCH_SF) --tpcds-sf $(SIDE_TPCDS_SF)

# Load test (bench/load, a Go program): `icefloe coordinator` and
# LOAD_WORKERS `icefloe worker`s as processes, TPC-H SF0.1 orders and
# lineitem (generated once by tpchgen-cli into integration/.tpch-data),
# LOAD_CLIENTS clients mixing scans, aggregates, point queries and INSERTs
# for LOAD_DURATION, then the same with one client running cross joins.
# Writes bench/load/out/results.json and rewrites docs/benchmarks.md's
# load section. Reported, never asserted, except that a wrong answer or a
# lost or doubled INSERT fails it. Not part of make test.
LOAD_CLIENTS  ?= 16
LOAD_WORKERS  ?= 2
LOAD_DURATION ?= 60s
bench-load: build tpch-sf0.1
	$(GO) run ./bench/load -bin $(abspath $(BIN)) -data integration/.tpch-data/sf0.1 \
	  -clients $(LOAD_CLIENTS) -workers $(LOAD_WORKERS) -duration $(LOAD_DURATION) \
	  -out bench/load/out/results.json -doc docs/benchmarks.md

# The soak: SOAK_CLIENTS clients of scans, aggregates, point queries,
# INSERTs, DELETEs and abandoned streams with expire_snapshots every
# minute, for SOAK_DURATION, sampling every process's live heap (after a
# GC) every SOAK_SAMPLE; its figure is each process's live-heap slope in
# MB/min. Writes bench/load/out/soak.json and rewrites docs/benchmarks.md's
# soak section. Reported, never asserted, except that a wrong answer fails
# it. Not part of make test.
SOAK_CLIENTS  ?= 8
SOAK_DURATION ?= 10m
SOAK_SAMPLE   ?= 10s
bench-soak: build tpch-sf0.1
	$(GO) run ./bench/load -bin $(abspath $(BIN)) -data integration/.tpch-data/sf0.1 \
	  -soak $(SOAK_DURATION) -soak-clients $(SOAK_CLIENTS) -soak-sample $(SOAK_SAMPLE) -workers $(LOAD_WORKERS) \
	  -soak-out bench/load/out/soak.json -logs bench/load/out/soak-logs -doc docs/benchmarks.md

# TPC-H SF0.1 as tpchgen-cli's Parquet files, for bench-load and bench-soak.
tpch-sf0.1:
	scripts/ensure-venv integration/.venv-tpch bench/tpch/requirements.txt
	integration/.venv-tpch/bin/python -c 'import sys; sys.path.insert(0, "bench/tpch"); import tpch; \
	  tpch.generate("integration/.venv-tpch/bin/tpchgen-cli", 0.1, "integration/.tpch-data/sf0.1")'

# ---- packaging ----------------------------------------------------------------

docker:
	$(DOCKER) build -t $(DOCKER_IMAGE) .

# The Dockerfile's final stage with buildah, from a root filesystem made
# here (scripts/image-rootfs) as the named context "rootfs": no daemon, no
# base image to pull. integration/image/run builds and runs it in the tests.
image: build
	rm -rf bin/rootfs && scripts/image-rootfs $(BIN) bin/rootfs
	buildah --storage-driver vfs bud --isolation chroot --build-context rootfs=bin/rootfs -t $(DOCKER_IMAGE) .

clean:
	rm -rf bin

# Also the test tools the integration suites installed.
distclean: clean
	rm -rf integration/.venv integration/.venv-catalogs integration/.venv-tpch integration/.venv-tpcds integration/.venv-sidebyside integration/.venv-bench integration/.tpch-data integration/.tpcds-data integration/.m2 integration/java/target integration/.tools
