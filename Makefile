# graft's build, test and run entry points. `make run` and `make test` are the
# two commands a newcomer needs; everything they depend on is installed or
# built here and cached under .cache/ (ignored by git).

GO        ?= go
BIN       := bin
CACHE     := $(CURDIR)/.cache
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
BUILDTIME ?= $(shell git log -1 --format=%cI 2>/dev/null)
# graft version reports these; a build without them (go install) reports
# what the Go toolchain recorded.
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.revision=$(REVISION) -X main.buildTime=$(BUILDTIME)
PKGS      := ./...

export CGO_ENABLED ?= 0

# staticcheck is built once from its own module, at this version, into
# .cache/bin under a name that carries the version: a new pin builds a new
# binary. v0.8.2 is staticcheck 2026.2.2, the newest release; go1.26
# support came with 2026.1 (v0.7.0).
STATICCHECK_VERSION := v0.8.2
STATICCHECK         := $(CACHE)/bin/staticcheck-$(STATICCHECK_VERSION)

# helm and promtool, for the chart and the alert rules (`go test ./deploy`
# and the e2e suite run them), are built from their own modules, so neither
# enters graft's go.mod, and cached under names carrying their versions.
# Cold, on the 2-core machine: helm about 5 minutes, promtool about 10.
# - helm v4.3.1 (go install): renders and lints deploy/helm/graft.
# - promtool from the builder module e2e/tools/promtool, which pins
#   github.com/prometheus/prometheus v0.314.0 (Prometheus 3.14.0, whose
#   PromQL parser the e2e module uses too). Built with remove_all_sd:
#   checking rules needs no service discovery, and one discovery plugin's
#   module (hashicorp/nomad/api) is refused by the module proxy in newer
#   releases.
HELM_VERSION       := v4.3.1
HELM               := $(CACHE)/bin/helm-$(HELM_VERSION)
PROMTOOL_MODULE    := e2e/tools/promtool
PROMETHEUS_VERSION := $(shell awk '{for (i = 1; i < NF; i++) if ($$i == "github.com/prometheus/prometheus" && $$(i+1) ~ /^v/) print $$(i+1)}' $(PROMTOOL_MODULE)/go.mod)
PROMTOOL           := $(CACHE)/bin/promtool-$(PROMETHEUS_VERSION)

# The programs the built-in templates' configurations are handed to, each
# built from a builder module pinned to the release the template's default
# image runs (docs/reference/images.md), cached under names carrying it:
# - otelcol from e2e/tools/otelcol: the OpenTelemetry Collector with
#   exactly the components the otel-agent template configures.
# Vault (the secrets-agent template) is not among them: Vault 1.21.4's
# module does not build from the module proxy (its in-tree sdk is
# unpublished: sdk v0.21.0 changed framework.Backend.ActivationFunc, v0.20.0
# lacks the observation API 1.21 uses). TestSecretsAgentConfigParses runs
# when GRAFT_VAULT names a vault binary.
# e2e/tools/envoycheck is a test module: the mesh-proxy bootstrap against
# Envoy's API definitions (go-control-plane), run by `make unit`.
OTELCOL_MODULE  := e2e/tools/otelcol
OTELCOL_VERSION := $(shell awk '{for (i = 1; i < NF; i++) if ($$i == "go.opentelemetry.io/collector/otelcol" && $$(i+1) ~ /^v/) print $$(i+1)}' $(OTELCOL_MODULE)/go.mod)
OTELCOL         := $(CACHE)/bin/otelcol-$(OTELCOL_VERSION)
ENVOYCHECK_MODULE := e2e/tools/envoycheck

# What the deploy and templates tests (in `make unit`) and the e2e suite are
# told about the tools; a test that needs one and finds no path skips,
# except on CI.
TOOLS_ENV := GRAFT_HELM=$(HELM) GRAFT_PROMTOOL=$(PROMTOOL) GRAFT_OTELCOL=$(OTELCOL)

.PHONY: all build run test unit fmt vet bench-go lint-templates fuzz clean tools docs

all: build

## build: the graft binary in bin/.
build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/graft ./cmd/graft

## run: serve on the embedded templates with a self-signed certificate.
run: build
	$(BIN)/graft serve

## test: vet and template lint, then the unit tests (race detector on) and the end-to-end suite side by side, and the API-level suites on the oldest Kubernetes the README claims.
# The unit tests keep both cores busy; the e2e suite mostly waits on its
# cluster (rollouts, outages, controllers), so running the two together
# takes about as long as the e2e suite alone (8.5 minutes against 12.7 one
# after the other on the 2-core machine, warm). -O keeps each one's
# output together, printed as it ends. e2e-oldest (the newest Kubernetes
# is e2e's) builds the oldest kube-apiserver once, then runs in a couple
# of minutes.
test: vet lint-templates
	$(MAKE) --no-print-directory -j2 -O unit e2e e2e-oldest

## unit: every package's tests in the main module, race detector on (the e2e module's run in e2e); then the server's allocation tests without it.
# The race detector makes sync.Pool drop items at random, so the server's
# allocation tests skip under it; the second run is where they assert.
# -timeout 60m: cmd/graft's race-enabled tests take about 2 minutes on an idle
# 2-core machine and over 30 at load average 20 (cmd/graft and deploy both
# timed out at 30 beside the e2e suite there); a timeout would fail a slow
# machine, not a slow graft.
unit: $(HELM) $(PROMTOOL) $(OTELCOL)
	$(TOOLS_ENV) CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 60m $(PKGS)
	$(GO) test -count=1 -run 'Allocations' ./webhook/
	cd $(ENVOYCHECK_MODULE) && $(GO) test -count=1 ./...

## fmt: gofmt every tracked Go file.
fmt:
	gofmt -w $$(git ls-files '*.go')

## vet: gofmt check, then go vet and staticcheck over the main module and the e2e module.
vet: $(STATICCHECK)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	cd e2e && $(GO) vet ./...
	cd $(ENVOYCHECK_MODULE) && $(GO) vet ./...
	cd $(OTELCOL_MODULE) && $(GO) vet ./...
	$(STATICCHECK) $(PKGS)
	cd e2e && $(STATICCHECK) ./...
	cd $(ENVOYCHECK_MODULE) && $(STATICCHECK) ./...
	cd $(OTELCOL_MODULE) && $(STATICCHECK) ./...

## tools: build (or reuse) the cached staticcheck, helm, promtool and otelcol.
tools: $(STATICCHECK) $(HELM) $(PROMTOOL) $(OTELCOL)

# go-install builds the command $(1) at version $(2) with go install flags
# $(3) into a temporary directory and moves it to the target, so an
# interrupted build is never mistaken for a cached one.
define go-install
	@mkdir -p $(@D)
	rm -rf $@.tmp
	GOBIN=$@.tmp CGO_ENABLED=0 $(GO) install -trimpath $(3) $(1)@$(2)
	mv $@.tmp/$(notdir $(1)) $@
	rmdir $@.tmp
endef

$(STATICCHECK):
	$(call go-install,honnef.co/go/tools/cmd/staticcheck,$(STATICCHECK_VERSION))

$(HELM):
	$(call go-install,helm.sh/helm/v4/cmd/helm,$(HELM_VERSION),-ldflags '-s -w -X helm.sh/helm/v4/internal/version.version=$(HELM_VERSION)')

# Prometheus tags its Go module v0.3MM.P for release 3.MM.P.
$(PROMTOOL):
	@[ -n "$(PROMETHEUS_VERSION)" ] || { echo "no prometheus version in $(PROMTOOL_MODULE)/go.mod" >&2; exit 1; }
	@mkdir -p $(@D)
	cd $(PROMTOOL_MODULE) && CGO_ENABLED=0 $(GO) build -trimpath -tags remove_all_sd \
		-ldflags '-s -w -X github.com/prometheus/common/version.Version=3.$(PROMETHEUS_VERSION:v0.3%=%)' \
		-o $@.tmp github.com/prometheus/prometheus/cmd/promtool
	mv $@.tmp $@

# The collector reports the release it was built from (its Go module
# v0.MMM.P is collector release 0.MMM.P).
$(OTELCOL):
	@[ -n "$(OTELCOL_VERSION)" ] || { echo "no collector version in $(OTELCOL_MODULE)/go.mod" >&2; exit 1; }
	@mkdir -p $(@D)
	cd $(OTELCOL_MODULE) && CGO_ENABLED=0 $(GO) build -trimpath \
		-ldflags '-s -w -X main.version=$(OTELCOL_VERSION:v%=%)' -o $@.tmp .
	mv $@.tmp $@

## docs: regenerate what is generated from the code: docs/reference/ (cli.md from the commands' help) and the Helm chart's values schema.
docs:
	$(GO) generate ./internal/refdocs
	$(GO) test ./cmd/graft -run 'TestCLIReference|TestComparison' -update-docs

## lint-templates: the built-in templates pass lint and templates/README.md is current.
lint-templates:
	$(GO) run ./cmd/graft templates lint templates/
	$(GO) run ./cmd/graft templates docs --check -o templates/README.md

## fuzz: a short run of every fuzz target in the main module (FUZZTIME per target).
# The targets are found, not listed, so a new one cannot be forgotten.
FUZZTIME ?= 30s
fuzz:
	@set -e; git grep -n '^func Fuzz[A-Za-z0-9_]*(' -- '*_test.go' ':!e2e' | \
	while IFS=: read -r file _ decl; do \
		name=$${decl#func }; name=$${name%%(*}; \
		echo "$(GO) test ./$$(dirname $$file) -run '^\$$' -fuzz '^$$name\$$' -fuzztime $(FUZZTIME)"; \
		$(GO) test ./$$(dirname $$file) -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) </dev/null; \
	done

## bench-go: Go micro-benchmarks of the engine and server, six runs each, also saved to .cache/bench.txt.
# bash for pipefail: a failing benchmark must fail the target, not hide
# behind tee's success.
bench-go: SHELL := bash
bench-go: .SHELLFLAGS := -o pipefail -c
bench-go:
	@mkdir -p $(CACHE)
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./inject/ ./webhook/ | tee $(CACHE)/bench.txt

## clean: remove bin/ and .cache/, the cached kube-apiserver, staticcheck, helm and promtool included.
clean:
	rm -rf $(BIN) $(CACHE)

# Targets owned by the e2e suite, the load tests and the deploy manifests.
-include e2e/e2e.mk
-include bench/bench.mk
-include deploy/deploy.mk

# e2e.mk gives `e2e` its recipe; without it the target does nothing.
.PHONY: e2e
e2e:
