# Load tests (bench/): graft against the conventional injector and the
# transport floor, same corpus, same generator, servers with GOMAXPROCS=1
# on CPU 0 and the generator on CPU 1. Included by the Makefile, which
# gives GO, BIN and the `build` target.

BENCH_BIN     := bench/.cache/bin
BENCH_RESULTS := bench/results
BENCHRUN      := $(BENCH_BIN)/benchrun
# Extra benchrun flags, e.g. BENCH_FLAGS='-corpora small -d 10s'.
BENCH_FLAGS   ?=
# Extra flags of podlatency's fleet phase, e.g. BENCH_FLEET_FLAGS='-fleet-rounds 3'
# or, for a quick look, '-nodes 10 -deployments 20 -replicas 10 -canary-deployments 20'.
BENCH_FLEET_FLAGS ?=
# Extra podlatency flags, e.g. BENCH_E2E_FLAGS='-n 200 -burst 100' or
# BENCH_E2E_FLAGS='-cpuprofile /tmp/prof' (a kube-apiserver CPU profile per variant).
BENCH_E2E_FLAGS ?=
BENCH_PEERS    = -graft $(BIN)/graft -conventional $(BENCH_BIN)/conventional -floor $(BENCH_BIN)/floor
# Extra flags of bench/cmd/hostile, e.g. BENCH_HOSTILE_FLAGS='-d 20s -idle 2000'.
BENCH_HOSTILE_FLAGS ?=

.PHONY: bench bench-tools bench-load bench-quick bench-profile bench-e2e bench-audit bench-audit-fleet bench-fleet bench-hostile

## bench-tools: the harness, the load generator and the two peer servers.
bench-tools:
	$(GO) build -trimpath -o $(BENCH_BIN)/ ./bench/cmd/benchrun ./bench/cmd/loadgen ./bench/cmd/hostile ./bench/peers/conventional ./bench/peers/floor

## bench-load: graft, conventional and floor on every corpus closed-loop, small open-loop at 10k req/s; writes bench/results/latest.{md,json} and latency.png.
bench-load: build bench-tools
	$(BENCHRUN) $(BENCH_PEERS) -out $(BENCH_RESULTS) $(BENCH_FLAGS)

## bench-quick: bench-load in about 30 seconds (small and large corpora, 2 s runs), same outputs.
bench-quick: build bench-tools
	$(BENCHRUN) -quick $(BENCH_PEERS) -out $(BENCH_RESULTS) $(BENCH_FLAGS)

## bench-profile: bench-quick with graft built with symbols and every peer sampled by perf (bench/results/profile/).
bench-profile: bench-tools
	$(GO) build -trimpath -ldflags '-X main.version=$(VERSION)' -o $(BENCH_BIN)/graft ./cmd/graft
	$(BENCHRUN) -quick -graft $(BENCH_BIN)/graft -conventional $(BENCH_BIN)/conventional -floor $(BENCH_BIN)/floor \
		-perf graft,conventional,floor -out $(BENCH_RESULTS)/profile $(BENCH_FLAGS)

## bench: bench-go (the Go micro-benchmarks), then bench-load.
bench: bench-go bench-load

## bench-e2e: Pod create latency through a real kube-apiserver (default admission plugins), sequential and burst in rounds: no webhook, graft, minimal webhook (and replaying graft's patch), conventional, MutatingAdmissionPolicy, graft export; writes bench/results/e2e-latest.{md,json}.
bench-e2e: e2e-deps bench-tools
	cd e2e && $(E2E_ENV) GRAFT_BENCH_CONVENTIONAL=$(CURDIR)/$(BENCH_BIN)/conventional \
		$(GO) run ./cmd/podlatency -out ../$(BENCH_RESULTS) $(BENCH_E2E_FLAGS)

## bench-audit: graft audit over 10,000 Pods in a real kube-apiserver: wall time and peak RSS of the child, median of 5 runs; writes bench/results/audit-latest.{md,json}.
bench-audit: e2e-deps
	cd e2e && $(E2E_ENV) $(GO) run ./cmd/auditload -out ../$(BENCH_RESULTS) $(BENCH_AUDIT_FLAGS)

## bench-audit-fleet: graft audit at 10,000 Pods and again at 100,000 (Pods added in between): wall time and peak RSS, median of 3 runs at each size; writes bench/results/audit-fleet-latest.{md,json}.
bench-audit-fleet: e2e-deps
	cd e2e && $(E2E_ENV) $(GO) run ./cmd/auditload -pods 10000,100000 -runs 3 -out ../$(BENCH_RESULTS) -name audit-fleet-latest $(BENCH_AUDIT_FLAGS)

## bench-fleet: 100 simulated nodes, 200 Deployments scaled from 0 to 50 by the controllers (10,000 Pods) through graft's two replicas behind its Service, no webhook, the minimal webhook and its replay of graft's patch, each on a fresh cluster; and a canary tag over 100 rolled-out Deployments; writes bench/results/fleet-latest.{md,json}. Needs root (network namespaces).
bench-fleet: e2e-deps
	cd e2e && $(E2E_ENV) $(GO) run ./cmd/podlatency -fleet -out ../$(BENCH_RESULTS) $(BENCH_FLEET_FLAGS)

## bench-hostile: graft as deploy/base ships it (flags, config, GOMEMLIMIT=its memory limit) for 60 s under 200 header-only connections declaring the largest body, 10,000 idle TLS connections from 10 addresses and a stream of a 20,000-container Pod with all four templates; peak RSS, probes and reviews answered in time; writes bench/results/hostile-latest.{md,json}.
bench-hostile: build bench-tools
	$(BENCH_BIN)/hostile -graft $(BIN)/graft -deploy deploy -out $(BENCH_RESULTS) $(BENCH_HOSTILE_FLAGS)
