# vetbench: `make bench` runs the benchmark suite on the embedded twin and
# writes receipts; `make test` runs every test. Both need only Go (and Docker
# for the container twin; without a daemon the twin runs in-process).
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -ec
GO ?= go
# OUT names the run directory of make bench (absolute or relative to here);
# unset, each run gets a new out/runs/<time>-<id> and out/latest points at
# it. A named directory that holds results is refused unless FORCE=1.
# CONFIG=run.toml reads a run file (the environment overrides it).
OUT ?=
FORCE ?=
CONFIG ?=
# -count and friends for `make bench`, e.g. make bench BENCH_FLAGS='-count 10'
BENCH_FLAGS ?= -count 1
# the judgments suite; `make tokens` runs the token benchmarks
BENCH ?= Judgments
export TESTCONTAINERS_RYUK_DISABLED ?= true

.PHONY: bench tokens test calibrate predict fit variance gate gate-check image vet fmt fuzz vetbench ci-local docs-check

## bench: whole suite (3 sets x c=1,4,16,32); Go benchmark lines to stdout,
##        progress to stderr; in the run directory (printed): bench.txt,
##        receipts/ (one per point and pass), settings.toml, twin.log
BENCH_ENV = $(if $(OUT),VETBENCH_OUT=$(abspath $(OUT))) $(if $(FORCE),VETBENCH_FORCE=$(FORCE)) \
	$(if $(CONFIG),VETBENCH_CONFIG=$(abspath $(CONFIG)))
bench:
	$(strip $(BENCH_ENV) $(GO) test ./bench -run '^$$' -bench '$(BENCH)' -timeout 60m $(BENCH_FLAGS))

## tokens: the token-throughput suite (text and one image, c=1..32, 128
##         tokens, 3 repeats) and a small speed matrix on the embedded twin,
##         a few minutes; like bench: benchmark lines to stdout, and in the
##         run directory bench.txt, receipts/ (tokens_*.json, matrix.json,
##         matrix.csv), settings.toml. VETBENCH_TOKENS_* / VETBENCH_MATRIX_*
##         variables set win over the small matrix given here.
TOKENS_ENV = VETBENCH_MATRIX_CONTEXTS=$${VETBENCH_MATRIX_CONTEXTS:-1K,4K} \
	VETBENCH_MATRIX_LEVELS=$${VETBENCH_MATRIX_LEVELS:-1,16,64} \
	VETBENCH_MATRIX_DURATION=$${VETBENCH_MATRIX_DURATION:-3s} \
	VETBENCH_MATRIX_OUTPUT=$${VETBENCH_MATRIX_OUTPUT:-512} \
	VETBENCH_MATRIX_READY_TIMEOUT=$${VETBENCH_MATRIX_READY_TIMEOUT:-15s}
tokens:
	$(strip $(BENCH_ENV) $(TOKENS_ENV) $(GO) test ./bench -run '^$$' -bench 'Tokens|Matrix' -timeout 30m $(BENCH_FLAGS))

## test: vet, formatting, and every test (container tests need Docker under CI=true);
##       packages one at a time (-p 1): the timing tests must not compete for 2 cores
test: vet
	$(GO) test -count=1 -p 1 -timeout 30m ./...

## calibrate: the twin's H100 profile against typevet's receipts over real
##            loopback HTTP (time-scaled), and real timers at time scale 20;
##            a measurement, so opt-in and not part of make test: reports
##            twin/receipt ratios (benchstat-friendly) and fails outside ±15%
##            (BenchmarkHTTPvsSim: the twin over HTTP against its own
##            simulation at time scale 1 and 10, c up to 128; BenchmarkLoopbackFloor:
##            the same token stream with no twin in it; reports only)
calibrate:
	$(GO) test ./stub -run '^$$' -bench '^Benchmark(CalibrationChecksHTTP|TimeScale|HTTPvsSim|LoopbackFloor)$$' -benchtime 1x -count 1 -timeout 20m -args -calibrate

## predict: the prediction report: every published figure a physical profile
##          stands for (E2B and DeepSeek-V4-Flash matrices), twin vs published,
##          and whether the figure was used to fit (docs/prediction.md)
predict:
	$(GO) test ./stub -run '^TestPredictionReport$$' -count 1 -v

## fit: the twin's fitters (cmd/twinfit, package stub/fit) on simulated time:
##      FIT=hopper (default) fits EfficiencyHopper on the E2B matrix's 8K/16K
##      rows, FIT=e2b the E2B profile on every row, FIT=rtx3090 the RTX 3090
##      profile, FIT=h100 ProfileH100Gemma4 on the nine fitted typevet receipts
##      (FIT_FLAGS=-set signatures: one set); prints the constants to paste,
##      every figure used to fit and the held-out receipts
##      (tens of minutes of CPU for hopper/e2b, hours for h100)
FIT ?= hopper
fit:
	$(GO) run ./cmd/twinfit -fit $(FIT) $(FIT_FLAGS)

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi
	$(GO) vet ./...

## variance: run the suite COUNT times (default 10) and print benchstat's
##           median ± 95% CI per set (rows) and level (columns)
variance:
	@mkdir -p $(or $(OUT),out)
	COUNT=$(or $(COUNT),10) BENCH='$(BENCH)' OUT=$(or $(OUT),out)/variance.txt scripts/variance

## gate: speed gate between two benchmark outputs, e.g.
##       make gate BASE=baseline/bench.txt CAND=out/bench.txt
##       make exits 2 whenever a recipe fails (GNU make's own status), so
##       the line it prints names vetbench's: 1 slower, 2 could not compare,
##       130 interrupted. For that status itself, run scripts/gate or
##       go tool vetbench gate (docs/gate.md#exit-status).
GATE_FLAGS ?=
gate:
	@scripts/gate $(GATE_FLAGS) $(BASE) $(CAND) || { s=$$?; \
	  echo "make gate: vetbench gate exited $$s ($$(case $$s in 1) echo the candidate is slower;; 2) echo could not compare;; 130) echo interrupted;; *) echo failed;; esac)); make exits 2 for any failure" >&2; exit $$s; }

## docs-check: run every checked example of README.md and docs/*.md (fenced
##             blocks tagged `sh check` or `sh check-slow`: their commands,
##             exit statuses and stated outputs; docs/development.md);
##             make test runs the `sh check` ones
docs-check:
	VETBENCH_DOCS_CHECK=slow $(GO) test ./cmd/vetbench -count=1 -run '^TestDocExamples$$' -v -timeout 60m

## vetbench: build the CLI into bin/vetbench, stamped with VERSION (default:
##           git describe) through -ldflags; `go install` and `go build` work
##           too and take the version from the module and VCS (docs/install.md)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null)
vetbench:
	CGO_ENABLED=0 $(GO) build -ldflags '-X main.release=$(VERSION)' -o bin/vetbench ./cmd/vetbench

## gate-check: the README's "Gate an upgrade" flow on the twin, end to end
##             (opt-in; a measurement, not in `make test`): per trial a
##             baseline `make bench OUT=… BENCH_FLAGS='-count 10'
##             CONFIG=gate.toml`, a candidate slowed 20% and an unchanged
##             rerun (both with the baseline's settings.toml), one after
##             another; `vetbench gate` must fail the slowed one and pass
##             the rerun in every trial. GATE_CHECK_TRIALS=5 runs five
##             (about 11 minutes each); GATE_CHECK_OUT=dir keeps the runs.
GATE_CHECK_TRIALS ?= 1
gate-check:
	VETBENCH_GATE_CHECK=1 VETBENCH_GATE_CHECK_OUT=$(GATE_CHECK_OUT) VETBENCH_GATE_CHECK_TRIALS=$(GATE_CHECK_TRIALS) \
	  $(GO) test ./cmd/vetbench -count=1 -run '^TestGateOnSlowedTwin$$' -v -timeout $$(( 15 * $(GATE_CHECK_TRIALS) + 5 ))m

## fuzz: each fuzzer for its budget (FUZZTIME, default 60s; FuzzDiff and FuzzTwinDecodeChat 2x that:
##       each of its inputs is a whole /metrics parse), one after another,
##       with minimization capped at FUZZMINIMIZE calls per new input (the
##       60 s default leaves no time to fuzz); prints the executions each
##       reached. The seed corpora (testdata/fuzz) run in `make test`.
FUZZTIME ?= 60s
FUZZMINIMIZE ?= 200x
FUZZ_OUT ?= $(or $(OUT),out)/fuzz
FUZZERS ?= ./receipts:FuzzRead ./receipts/internal/jsontree:FuzzDecode ./receipts/matrix:FuzzMatrixCSV \
	./bench/scrape:FuzzDiff:2 ./judgments:FuzzScore ./judgments:FuzzDecodeChat ./stub:FuzzTwinDecodeChat:2 ./bench/stream:FuzzSSE \
	./receipts/speed:FuzzGate ./bench/stream:FuzzStreamBudget ./bench/sweep/config:FuzzRunFile ./judgments:FuzzBodies \
	./bench/scrape:FuzzMetricsBody
fuzz:
	@mkdir -p $(FUZZ_OUT)
	@for t in $(FUZZERS); do \
	  IFS=: read -r pkg name mult <<<"$$t"; \
	  budget=$(FUZZTIME); [ -z "$$mult" ] || budget=$$(( $${budget%s} * mult ))s; \
	  echo "== $$name ($$pkg, $$budget)"; \
	  $(GO) test $$pkg -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget -fuzzminimizetime $(FUZZMINIMIZE) \
	    2>&1 | tee $(FUZZ_OUT)/$$name.txt | grep -v 'new interesting' || true; \
	  grep -q '^PASS' $(FUZZ_OUT)/$$name.txt || { echo "$$name failed: see $(FUZZ_OUT)/$$name.txt"; exit 1; }; \
	done
	@echo "== executions reached"
	@for t in $(FUZZERS); do IFS=: read -r pkg name mult <<<"$$t"; \
	  printf '%-14s %s\n' $$name "$$(grep -o 'execs: [0-9]*' $(FUZZ_OUT)/$$name.txt | tail -1 | cut -d' ' -f2)"; done
