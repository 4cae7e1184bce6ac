# The end-to-end suite and the demo: a real etcd, a real kube-apiserver and
# the real graft binary on loopback. Included by the Makefile, which defines
# GO and CACHE.
#
# kube-apiserver is built once from the k8s.io/kubernetes module (see
# e2e/tools/kube-apiserver/go.mod) and cached under .cache/bin, named by the
# version that go.mod pins: a new pin builds a new binary, and nothing else
# (a checkout touching the file, say) throws the 3-6 minute build away.
# etcd comes from Debian.

E2E_TOOLS       := e2e/tools/kube-apiserver
E2E_K8S_VERSION := $(shell awk '{for (i = 1; i < NF; i++) if ($$i == "k8s.io/kubernetes" && $$(i+1) ~ /^v/) print $$(i+1)}' $(E2E_TOOLS)/go.mod)
E2E_K8S_MINOR   := $(word 2,$(subst ., ,$(E2E_K8S_VERSION)))
E2E_BIN         := $(CACHE)/bin
E2E_APISERVER   := $(E2E_BIN)/kube-apiserver-$(E2E_K8S_VERSION)
E2E_ETCD        ?= /usr/bin/etcd
E2E_GRAFT       := $(E2E_BIN)/graft-e2e
E2E_TIMEOUT     ?= 20m
# E2E_RUN narrows the suite to matching tests: make e2e E2E_RUN=Reinvocation
E2E_RUN         ?= .

E2E_APISERVER_LDFLAGS := -s -w \
	-X k8s.io/component-base/version.gitVersion=$(E2E_K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(E2E_K8S_MINOR) \
	-X k8s.io/component-base/version.gitTreeState=clean

# What the harness is told about the binaries it runs; helm (built by the
# Makefile) renders the chart the suite dry-run applies.
E2E_ENV := GRAFT_E2E_KUBE_APISERVER=$(E2E_APISERVER) \
	GRAFT_E2E_ETCD=$(E2E_ETCD) \
	GRAFT_E2E_GRAFT=$(E2E_GRAFT) \
	GRAFT_E2E_HELM=$(HELM)

.PHONY: e2e-deps e2e-graft kube-apiserver demo acceptance

## e2e: the e2e module's tests: the end-to-end suite against a real kube-apiserver and etcd, race detector on.
e2e: e2e-deps $(HELM)
	cd e2e && $(E2E_ENV) CGO_ENABLED=1 $(GO) test -race -count=1 -timeout $(E2E_TIMEOUT) -run '$(E2E_RUN)' -v ./...

# ACCEPTANCE_PODS sizes make acceptance's corpus (make e2e runs 150 of it).
ACCEPTANCE_PODS ?= 2010

## acceptance: issue 21's whole acceptance corpus (ACCEPTANCE_PODS Pods x 8 profiles x 3 Pod Security levels) through kube-apiserver and graft as deploy/base ships it; prints the outcome table.
acceptance: e2e-deps
	cd e2e && $(E2E_ENV) GRAFT_ACCEPTANCE_PODS=$(ACCEPTANCE_PODS) $(GO) test -count=1 -timeout 60m -run TestAcceptanceCorpus -v ./acceptance

## demo: etcd + kube-apiserver + graft on loopback, one Pod injected, torn down.
demo: e2e-deps
	cd e2e && $(E2E_ENV) $(GO) run ./cmd/demo

e2e-deps: $(E2E_APISERVER) $(E2E_ETCD) e2e-graft

## kube-apiserver: build (or reuse) the cached kube-apiserver.
kube-apiserver: $(E2E_APISERVER)

# Built into a temporary name and moved, so an interrupted build is never
# mistaken for a cached one.
$(E2E_APISERVER):
	@[ -n "$(E2E_K8S_VERSION)" ] || { echo "no k8s.io/kubernetes version in $(E2E_TOOLS)/go.mod" >&2; exit 1; }
	@mkdir -p $(E2E_BIN)
	@echo "building kube-apiserver $(E2E_K8S_VERSION) (once; cached in $(E2E_BIN))"
	cd $(E2E_TOOLS) && $(GO) build -trimpath -ldflags '$(E2E_APISERVER_LDFLAGS)' \
		-o $@.tmp k8s.io/kubernetes/cmd/kube-apiserver
	mv $@.tmp $@

# etcd-server from Debian, installed only when missing.
$(E2E_ETCD):
	@sudo=; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	$$sudo apt-get update && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y etcd-server

# Always rebuilt: go build is incremental, so this is cheap when nothing changed.
e2e-graft:
	@mkdir -p $(E2E_BIN)
	$(GO) build -trimpath -o $(E2E_GRAFT) ./cmd/graft
