# tqmon — build, test, benchmark, regenerate parsers, fuzz.
GO        ?= go
FUZZTIME  ?= 10s
# Packages with fuzz targets: "package:FuzzName" pairs.
FUZZ_TARGETS := \
	./grammar/tquel:FuzzParse \
	./grammar/sdl:FuzzParse \
	./grammar/display:FuzzParse \
	./algebra/exec:FuzzQuery \
	./store/history:FuzzReadCSV \
	./store/history:FuzzLoadHistoryDir \
	./algebra:FuzzParseTime \
	./resident/wire:FuzzDecodeBatch \
	./resident/wire:FuzzDecodeCommand \
	./resident/wire:FuzzDecodeHello \
	./store/db:FuzzDecodeBlock \
	./store/db:FuzzDecodeRecord \
	./store/db:FuzzOpenCorrupt \
	./store/parquet:FuzzOpenDamaged

.PHONY: all build tqmon test size-check test-long bench grammar grammar-check fuzz vet fmt-check demo bench-display bench-store bench-kernel bench-engine bench-safety bench-wire test-heavy bench-fleet

all: build

# The main job: the paper's system running live, monitored by its
# ResumedbyP1 query (results as they come, then packets per sensor).
demo:
	$(GO) run ./cmd/tqmon demo --headless --duration 3s -f testdata/paper/resumed_by_p1.tq --stats

# --version names the commit even in builds without VCS information
# (-buildvcs=false, as .ci/run builds): the linker stamps it.
VCS_COMMIT   := $(shell git rev-parse HEAD 2>/dev/null)
VCS_TIME     := $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
VCS_MODIFIED := $(shell git rev-parse HEAD >/dev/null 2>&1 && { test -z "$$(git status --porcelain 2>/dev/null)" && echo false || echo true; })
LDFLAGS      := -X main.stampCommit=$(VCS_COMMIT) -X main.stampTime=$(VCS_TIME) -X main.stampModified=$(VCS_MODIFIED)
BIN          ?= bin/tqmon

build:
	$(GO) build ./...
	$(MAKE) --no-print-directory tqmon

# The tqmon binary alone, stamped, at $(BIN).
tqmon:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/tqmon

# The full check CI runs: generated parsers current, formatting, vet, unit and
# differential tests, and a short bounded run of every fuzz target.
test: size-check grammar-check fmt-check vet
	$(GO) test ./...
	$(MAKE) fuzz FUZZTIME=$(FUZZTIME)

# Longer differential runs (many more random histories).
test-long:
	TQMON_DIFF_HISTORIES=3000 $(GO) test -run 'Differential' -count=1 -timeout 60m ./...
	$(GO) test -run 'TestFleetCluster' -count=10 ./remote/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# What runs at the resident, on the wire: tuples and bytes per result with
# and without it, the twins interleaved on the same seeds (σ at the
# resident, two-phase counting triggers, entity-relation selections).
bench-wire:
	$(GO) test -run '^$$' -bench 'BenchmarkWireM3|BenchmarkWireResident|BenchmarkWirePlaced' -benchtime 10x ./remote/

# Subject safety: the subject's throughput with a monitor that never reads
# attached, as a ratio to no monitor at all, measured in the same run
# (interleaved slices, the median pair: resident/bench_test.go). tqmon
# promises ≥ 0.9. Five runs, then their median and range.
SAFETY_COUNT ?= 5
# Tuples/s from 1, 4 and 16 residents to one monitor through one embedded
# NATS server against the direct gRPC path, interleaved, FLEET_COUNT runs
# each: compare the two paths' medians of one run.
FLEET_COUNT ?= 5
bench-fleet:
	$(GO) test -run '^$$' -bench 'BenchmarkFleet$$' -benchtime 20x -count $(FLEET_COUNT) ./resident/fleet/ | tee /tmp/tqmon-bench-fleet.txt
	@awk '/^BenchmarkFleet\// { split($$1, p, "/"); k = p[2] "/" p[3]; sub(/-[0-9]+$$/, "", k); v[k] = v[k] " " $$(NF-1) } \
	  END { for (k in v) print k ":" v[k] " tuples/s" }' /tmp/tqmon-bench-fleet.txt | sort

bench-safety:
	$(GO) test -run '^$$' -bench 'BenchmarkHostileMonitorNeverReads$$' -benchtime 2s -count $(SAFETY_COUNT) ./resident/ | tee /tmp/tqmon-bench-safety.txt
	@awk '{ for (i = 2; i <= NF; i++) if ($$i == "ratio") r[n++] = $$(i-1) } \
	END { if (n == 0) { print "bench-safety: no ratio measured" > "/dev/stderr"; exit 1 } \
	      for (i = 1; i < n; i++) for (j = i; j > 0 && r[j-1] > r[j]; j--) { t = r[j]; r[j] = r[j-1]; r[j-1] = t } \
	      printf "subject throughput with a monitor that never reads / with none: median %.3f (min %.3f, max %.3f, %d runs; promised >= 0.9)\n", r[int(n/2)], r[0], r[n-1], n; \
	      if (r[int(n/2)] < 0.9) exit 1 }' /tmp/tqmon-bench-safety.txt

# The animated display: derived tuples/s absorbed while drawing 30 frames/s
# of a 200-entity system, and the time to draw a frame.
bench-display:
	$(GO) test -run '^$$' -bench 'BenchmarkDisplay' -benchmem ./display/scene/

grammar:
	bash grammar/generate.sh

grammar-check:
	bash grammar/check.sh

# No tracked file over 1 MiB: recordings, histories, binaries and fuzz
# caches belong in temporary directories, never in the repository.
size-check:
	@big=$$(git ls-files -z 2>/dev/null | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 1048576 {print}'); \
	if [ -n "$$big" ]; then echo "size-check: tracked files over 1 MiB:"; echo "$$big"; exit 1; fi

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '/gen/') 2>/dev/null); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# One worker per target (-parallel 1): a run is bounded by FUZZTIME anyway,
# and each extra worker repeats the baseline-coverage pass over the corpus.
#
# Go's fuzzing engine sometimes ends a run with "context deadline exceeded"
# and no failing input (a race in stopping its worker, seen under load):
# such a run is said and tried once more. A run that wrote a failing input
# (testdata/fuzz/...) fails at once.
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		for try in 1 2; do \
			echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
			out=$$(mktemp); \
			if $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) -parallel 1 $$pkg >$$out 2>&1; then \
				cat $$out; rm -f $$out; break; \
			fi; \
			cat $$out; \
			if [ $$try = 1 ] && grep -q 'context deadline exceeded' $$out && ! grep -q 'Failing input written to' $$out; then \
				echo "fuzz: $$name: the fuzzing engine timed out stopping a worker, with no failing input; once more"; rm -f $$out; continue; \
			fi; \
			rm -f $$out; exit 1; \
		done; \
	done

# The store's figures: recording and replaying (blocks against one badger
# key per tuple, same run) and a timeslice over histories 1, 10, 100 times
# the base size.
bench-store:
	$(GO) test -run '^$$' -bench 'BenchmarkStoreRecord' -benchtime 2000000x -count 3 ./store/db
	$(GO) test -run '^$$' -bench 'BenchmarkStoreReplay' -benchtime 5x -count 3 ./store/db
	$(GO) test -run '^$$' -bench 'BenchmarkStoreTimeslice' ./store/replay
	$(GO) test -run '^$$' -bench 'BenchmarkParquetWrite' -benchtime 1000000x -count 3 ./store/parquet
	$(GO) test -run '^$$' -bench 'BenchmarkParquetScan' -benchtime 3x -count 3 ./store/parquet

# Kernel sensors against bpftrace (root): the N-getppid workload timed
# uninstrumented, under tqmon and under an equivalent bpftrace script, for
# per-event delivery of the target's calls and for a predicate matching no
# event; reports added ns per call and the ratio tqmon/bpftrace. Then the
# whole commands (BenchmarkKernelCommand): tqmon query --kernel -c against
# bpftrace -c with a printf one-liner, both printing every system call of
# the workload to a file: added CPU per event (start-up subtracted), the
# ratio, calls lost and peak RSS. BENCH_N calls per run, BENCH_ROUNDS
# interleaved rounds (medians); BENCH_BASE=PATH adds another tqmon binary
# (a baseline) to the commands' rounds. BenchmarkKernelWirePlaced: bytes
# and wire tuples per result of a kernel aggregate run as a plan fragment
# at a served kernel resident against the same at the monitor (NoPlans).
BENCH_N      ?= 200000
BENCH_ROUNDS ?= 5
BENCH_BASE   ?=
bench-kernel:
	@command -v bpftrace >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bpftrace; }
	TQMON_BENCH_KERNEL=1 TQMON_BENCH_N=$(BENCH_N) TQMON_BENCH_ROUNDS=$(BENCH_ROUNDS) TQMON_BENCH_BASE=$(BENCH_BASE) \
		$(GO) test -run '^$$' -bench 'BenchmarkKernelOverhead|BenchmarkKernelCommand|BenchmarkKernelWirePlaced' -benchtime 1x -count 1 -timeout 60m -v ./resident/kernel/

# Tests too heavy for every run (root): TestKernelCountsEveryCall counts
# 4,000,000 getppid calls of a command with count() and wants them all.
test-heavy:
	TQMON_HEAVY=1 $(GO) test -run 'TestKernelCountsEveryCall' -count 1 -timeout 30m -v ./resident/kernel/

# The query engine against DuckDB (see internal/benchengine/doc.go): the
# same generated histories of the paper's system (ENGINE_SIZES tuples),
# four queries, whole commands timed interleaved over ENGINE_ROUNDS rounds,
# results checked equal; prints times, tqmon/DuckDB ratios and peak RSS.
# DuckDB is @duckdb/node-api from npm (the version in package-lock.json),
# installed under internal/benchengine/node_modules when missing.
ENGINE_SIZES   ?= 100000 1000000 5000000
ENGINE_ROUNDS  ?= 3
ENGINE_TIMEOUT ?= 15m
ENGINE_DIR     ?= /tmp/tqmon-bench-engine
bench-engine:
	@command -v node >/dev/null && command -v npm >/dev/null || { \
		echo "bench-engine: DuckDB runs under Node.js; node and npm are missing" >&2; \
		if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
			echo "bench-engine: installing nodejs and npm with apt-get" >&2; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; \
		else echo "bench-engine: install Node.js (nodejs, npm) and run make bench-engine again" >&2; exit 1; fi; }
	@test -d internal/benchengine/node_modules/@duckdb/node-api || \
		{ echo "bench-engine: installing @duckdb/node-api (npm ci in internal/benchengine)"; \
		  cd internal/benchengine && npm ci --no-audit --no-fund; }
	$(GO) build -o bin/tqmon ./cmd/tqmon
	$(GO) run ./internal/benchengine -tqmon bin/tqmon -sizes '$(ENGINE_SIZES)' \
		-rounds $(ENGINE_ROUNDS) -timeout $(ENGINE_TIMEOUT) -dir $(ENGINE_DIR)
