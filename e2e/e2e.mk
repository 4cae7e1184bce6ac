# The end-to-end suite and the demo: a cluster on loopback, as clusters run
# it: etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok's
# simulated nodes, and the real graft binary. Included by the Makefile,
# which defines GO, CACHE and go-install.
#
# Every binary is built once from its Go module and cached under .cache/bin,
# named by the version its builder module (or this file) pins: a new pin
# builds a new binary, and nothing else (a checkout touching a file, say)
# throws a build away.
# - kube-apiserver, kube-controller-manager, kube-scheduler, the kubelet
#   and kubectl from the k8s.io/kubernetes module that
#   e2e/tools/kube-apiserver/go.mod pins, in one `go build` of the ones
#   missing (cold on the 2-core machine: about 8 minutes for kube-apiserver
#   alone, 3 more for the controllers and scheduler, 2 for kubectl, which
#   runs the docs' commands in e2e/docscluster), and kustomize, the release
#   kubectl embeds, for the docs' `kustomize edit`.
# - etcd from go.etcd.io/etcd/server/v3, pinned by e2e/tools/etcd/go.mod
#   (about a minute).
# - kwok (simulated nodes and kubelets) with `go install` at KWOK_VERSION,
#   and its stage files (how a simulated node and Pod change state) taken
#   from the same module into .cache/kwok-<version>/stages.yaml.

E2E_TOOLS       := e2e/tools/kube-apiserver
E2E_K8S_VERSION := $(shell awk '{for (i = 1; i < NF; i++) if ($$i == "k8s.io/kubernetes" && $$(i+1) ~ /^v/) print $$(i+1)}' $(E2E_TOOLS)/go.mod)
E2E_K8S_MINOR   := $(word 2,$(subst ., ,$(E2E_K8S_VERSION)))
E2E_BIN         := $(CACHE)/bin
E2E_APISERVER   := $(E2E_BIN)/kube-apiserver-$(E2E_K8S_VERSION)
E2E_CONTROLLERS := $(E2E_BIN)/kube-controller-manager-$(E2E_K8S_VERSION)
E2E_SCHEDULER   := $(E2E_BIN)/kube-scheduler-$(E2E_K8S_VERSION)
E2E_KUBELET     := $(E2E_BIN)/kubelet-$(E2E_K8S_VERSION)
E2E_KUBECTL     := $(E2E_BIN)/kubectl-$(E2E_K8S_VERSION)
E2E_K8S_BINS    := $(E2E_APISERVER) $(E2E_CONTROLLERS) $(E2E_SCHEDULER) $(E2E_KUBELET) $(E2E_KUBECTL)
# kustomize, the release kubectl embeds (the docs' `kustomize edit`), from
# the same builder module.
E2E_KUSTOMIZE_VERSION := $(shell awk '{for (i = 1; i < NF; i++) if ($$i == "sigs.k8s.io/kustomize/kustomize/v5" && $$(i+1) ~ /^v/) print $$(i+1)}' $(E2E_TOOLS)/go.mod)
E2E_KUSTOMIZE   := $(E2E_BIN)/kustomize-$(E2E_KUSTOMIZE_VERSION)
E2E_ETCD_TOOLS  := e2e/tools/etcd
E2E_ETCD_VERSION := $(shell awk '{for (i = 1; i < NF; i++) if ($$i == "go.etcd.io/etcd/server/v3" && $$(i+1) ~ /^v/) print $$(i+1)}' $(E2E_ETCD_TOOLS)/go.mod)
E2E_ETCD        := $(E2E_BIN)/etcd-$(E2E_ETCD_VERSION)
KWOK_VERSION    := v0.8.0
E2E_KWOK        := $(E2E_BIN)/kwok-$(KWOK_VERSION)
E2E_KWOK_STAGES := $(CACHE)/kwok-$(KWOK_VERSION)/stages.yaml
# kwok's stages, from its kustomize/stage tree: nodes go Ready and keep a
# lease, Pods go Running and Ready (Succeeded when they end, as a Job's
# do), deleted Pods go away.
KWOK_STAGE_FILES := node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
	pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml
# E2E_NODES is how many simulated nodes the suite and the demo run.
E2E_NODES       ?= 3
E2E_GRAFT       := $(E2E_BIN)/graft-e2e
# E2E_TIMEOUT bounds each e2e package's run. The suite took 20 minutes at
# load average 20 on the 2-core machine (make test runs the unit tests
# beside it); a timeout fails a slow machine, not a slow graft.
E2E_TIMEOUT     ?= 45m
# E2E_RUN narrows the suite to matching tests: make e2e E2E_RUN=Reinvocation
E2E_RUN         ?= .

# k8s-ldflags stamps version $(1) (v1.NN.P), minor $(2), into a Kubernetes
# binary, as its release build does: the API server reports it on /version.
k8s-ldflags = -s -w \
	-X k8s.io/component-base/version.gitVersion=$(1) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=$(2) \
	-X k8s.io/component-base/version.gitTreeState=clean
E2E_APISERVER_LDFLAGS := $(call k8s-ldflags,$(E2E_K8S_VERSION),$(E2E_K8S_MINOR))

# Real nodes (e2e/realnode, make bench-node) run Debian's containerd, runc
# and CNI plugins, which make node-tools installs with apt-get, pinned to
# bookworm's releases (the patch suffix may move with security updates);
# the kubelet is built above with the control plane. Cold: about 15 s.
NODE_PACKAGES := containerd=1.6.20~ds1-1+deb12u* runc=1.1.5+ds1-1+deb12u* \
	containernetworking-plugins=1.1.1+ds1-3+b* iptables=1.8.9-2*
# The harness imports graft's image for this machine's platform, as make
# images writes it (bin/e2e-image, apart from a release's bin/images).
E2E_IMAGE_PLATFORM := linux/$(shell $(GO) env GOARCH)
E2E_IMAGES_DIR     := $(CURDIR)/$(BIN)/e2e-image
E2E_GRAFT_IMAGE    := $(E2E_IMAGES_DIR)/graft.tar

# What the harness is told about the binaries it runs; helm (built by the
# Makefile) renders the chart the suite dry-run applies.
E2E_ENV := GRAFT_E2E_KUBE_APISERVER=$(E2E_APISERVER) \
	GRAFT_E2E_KUBE_CONTROLLER_MANAGER=$(E2E_CONTROLLERS) \
	GRAFT_E2E_KUBE_SCHEDULER=$(E2E_SCHEDULER) \
	GRAFT_E2E_KWOK=$(E2E_KWOK) \
	GRAFT_E2E_KWOK_STAGES=$(E2E_KWOK_STAGES) \
	GRAFT_E2E_NODES=$(E2E_NODES) \
	GRAFT_E2E_ETCD=$(E2E_ETCD) \
	GRAFT_E2E_GRAFT=$(E2E_GRAFT) \
	GRAFT_E2E_HELM=$(HELM) \
	GRAFT_E2E_KUBELET=$(E2E_KUBELET) \
	GRAFT_E2E_KUBECTL=$(E2E_KUBECTL) \
	GRAFT_E2E_KUSTOMIZE=$(E2E_KUSTOMIZE) \
	GRAFT_E2E_GRAFT_IMAGE=$(E2E_GRAFT_IMAGE)

.PHONY: e2e-deps e2e-graft e2e-image node-tools kube-apiserver cluster-tools demo acceptance bench-node

## e2e: the e2e module's tests: the end-to-end suite against a real control plane and simulated nodes, and Pods on real nodes (e2e/realnode), race detector on.
e2e: e2e-deps $(HELM)
	cd e2e && $(E2E_ENV) CGO_ENABLED=1 $(GO) test -race -count=1 -timeout $(E2E_TIMEOUT) -run '$(E2E_RUN)' -v ./...

# ACCEPTANCE_PODS sizes make acceptance's corpus (make e2e runs 150 of it).
ACCEPTANCE_PODS ?= 2010

## acceptance: issue 21's whole acceptance corpus (ACCEPTANCE_PODS Pods x 8 profiles x 3 Pod Security levels) through kube-apiserver and graft as deploy/base ships it; prints the outcome table.
acceptance: e2e-deps
	cd e2e && $(E2E_ENV) GRAFT_ACCEPTANCE_PODS=$(ACCEPTANCE_PODS) $(GO) test -count=1 -timeout 60m -run TestAcceptanceCorpus -v ./acceptance

## demo: a cluster on loopback (simulated nodes), a Deployment of 3 rolled out with graft's sidecar, torn down.
demo: e2e-deps
	cd e2e && $(E2E_ENV) $(GO) run ./cmd/demo

e2e-deps: cluster-tools e2e-graft e2e-image node-tools

## node-tools: install (as root, with apt-get) the pinned containerd, runc and CNI plugins real nodes run; without root it says what is missing.
node-tools:
	@set -ef; missing=; for spec in $(NODE_PACKAGES); do \
		pkg=$${spec%%=*}; want=$${spec#*=}; \
		have=$$(dpkg-query -W -f='$${Version}' $$pkg 2>/dev/null || true); \
		case "$$have" in $$want) ;; *) missing="$$missing $$spec";; esac; \
	done; \
	[ -n "$$missing" ] || exit 0; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then \
		echo "node-tools: need$$missing; install them as root (apt-get install), or the real-node tests skip" >&2; exit 0; \
	fi; \
	echo "apt-get install$$missing"; \
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing

# graft's image as make images builds it, for this platform, in bin/e2e-image
# (rebuilt when graft changes: go build is incremental).
e2e-image:
	@$(MAKE) --no-print-directory images IMAGE_PLATFORMS=$(E2E_IMAGE_PLATFORM) IMAGES_DIR=$(E2E_IMAGES_DIR)

# BENCH_NODE_PODS Pods per profile, created one after another;
# BENCH_NODE_FLAGS adds nodebench's flags (-profiles a,b to measure some).
BENCH_NODE_PODS ?= 50
BENCH_NODE_FLAGS ?=

## bench-node: Pod create to Ready on a real node, p50 and p99 over BENCH_NODE_PODS Pods, with no webhook and per built-in profile; the sidecars' start and idle memory; writes bench/results/node-latest.md.
bench-node: SHELL := bash
bench-node: .SHELLFLAGS := -o pipefail -c
bench-node: e2e-deps
	cd e2e && $(E2E_ENV) $(GO) run ./cmd/nodebench -pods $(BENCH_NODE_PODS) $(BENCH_NODE_FLAGS) | tee $(CURDIR)/bench/results/node-latest.md

## cluster-tools: build (or reuse) the cached etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubelet, kubectl, kustomize and kwok.
cluster-tools: $(E2E_K8S_BINS) $(E2E_KUSTOMIZE) $(E2E_ETCD) $(E2E_KWOK) $(E2E_KWOK_STAGES)

## kube-apiserver: build (or reuse) the cached kube-apiserver.
kube-apiserver: $(E2E_APISERVER)

# One go build of whichever of the three is missing: they share most of
# their packages, so building them together costs little more than the
# largest alone. Built into a temporary directory and moved, so an
# interrupted build is never mistaken for a cached one.
$(E2E_K8S_BINS) &:
	@[ -n "$(E2E_K8S_VERSION)" ] || { echo "no k8s.io/kubernetes version in $(E2E_TOOLS)/go.mod" >&2; exit 1; }
	@mkdir -p $(E2E_BIN)
	@set -e; cmds=; for b in $(notdir $(E2E_K8S_BINS:-$(E2E_K8S_VERSION)=)); do \
		[ -x "$(E2E_BIN)/$$b-$(E2E_K8S_VERSION)" ] || cmds="$$cmds $$b"; \
	done; \
	[ -n "$$cmds" ] || exit 0; \
	tmp=$(E2E_BIN)/kubernetes-$(E2E_K8S_VERSION).tmp; rm -rf $$tmp; \
	echo "building$$cmds $(E2E_K8S_VERSION) (once; cached in $(E2E_BIN))"; \
	pkgs=; for b in $$cmds; do pkgs="$$pkgs k8s.io/kubernetes/cmd/$$b"; done; \
	(cd $(E2E_TOOLS) && $(GO) build -trimpath -ldflags '$(E2E_APISERVER_LDFLAGS)' -o $$tmp/ $$pkgs); \
	for b in $$cmds; do mv $$tmp/$$b $(E2E_BIN)/$$b-$(E2E_K8S_VERSION); done; \
	rmdir $$tmp

$(E2E_KUSTOMIZE):
	@[ -n "$(E2E_KUSTOMIZE_VERSION)" ] || { echo "no sigs.k8s.io/kustomize/kustomize/v5 version in $(E2E_TOOLS)/go.mod" >&2; exit 1; }
	@mkdir -p $(@D)
	@echo "building kustomize $(E2E_KUSTOMIZE_VERSION) (once; cached in $(E2E_BIN))"
	cd $(E2E_TOOLS) && $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp sigs.k8s.io/kustomize/kustomize/v5
	mv $@.tmp $@

$(E2E_ETCD):
	@[ -n "$(E2E_ETCD_VERSION)" ] || { echo "no go.etcd.io/etcd/server/v3 version in $(E2E_ETCD_TOOLS)/go.mod" >&2; exit 1; }
	@mkdir -p $(@D)
	@echo "building etcd $(E2E_ETCD_VERSION) (once; cached in $(E2E_BIN))"
	cd $(E2E_ETCD_TOOLS) && $(GO) build -trimpath -ldflags '-s -w' -o $@.tmp go.etcd.io/etcd/server/v3
	mv $@.tmp $@

$(E2E_KWOK):
	$(call go-install,sigs.k8s.io/kwok/cmd/kwok,$(KWOK_VERSION),-ldflags '-s -w')

# The stage files come from the module kwok was built from, read where the
# module cache keeps it (outside any module, so graft's go.sum is not
# touched).
$(E2E_KWOK_STAGES):
	@mkdir -p $(@D)
	@set -e; dir=$$(cd / && $(GO) mod download -json sigs.k8s.io/kwok@$(KWOK_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
	[ -n "$$dir" ] || { echo "sigs.k8s.io/kwok@$(KWOK_VERSION): no module directory" >&2; exit 1; }; \
	for f in $(KWOK_STAGE_FILES); do echo "---"; echo "# $$f from sigs.k8s.io/kwok@$(KWOK_VERSION)"; cat "$$dir/kustomize/stage/$$f"; done > $@.tmp
	mv $@.tmp $@

# Always rebuilt: go build is incremental, so this is cheap when nothing changed.
e2e-graft:
	@mkdir -p $(E2E_BIN)
	$(GO) build -trimpath -o $(E2E_GRAFT) ./cmd/graft

# The version matrix: the API-level suites (admission alone: no
# controllers, no nodes) against each minor the README claims, newest
# last. Each kube-apiserver is built once from its builder module,
# e2e/tools/matrix/kubernetes-1.NN (written by builder.sh there), and cached
# by version; the harness's own version comes from e2e/tools/kube-apiserver.
# Cold on the 2-core machine a kube-apiserver takes 8 to 11 minutes, so the
# first make e2e-matrix takes over an hour; later ones minutes.
# The oldest is 1.35: the guarantee's CEL uses the list library
# (lists.range, sort), which kube-apiserver ships in 1.34 and accepts in
# new policies one minor later (so that a rollback can run them).
E2E_MATRIX_VERSIONS := v1.35.4 v1.36.3 $(E2E_K8S_VERSION)
E2E_OLDEST_VERSION  := $(firstword $(E2E_MATRIX_VERSIONS))
# The API-level suites: webhooks and what the API server does around them
# (skips, conflicts, reinvocation, dry-run, budgets), the guarantee policy,
# export, Pod Security and Pod validity, the goldens. A test that does not
# apply to a version skips and says why.
E2E_MATRIX_RUN := ^(TestAPIServerIsThePinnedVersion|TestShippedPolicyInAPIServer|TestEveryBuiltinTemplateIsAccepted|TestInjectedPodMatchesGolden|TestOneCallPerCreate|TestUnlabelledNamespaceNeverCallsGraft|TestPodOptOut|TestExcludedNamespacesNeverInjected|TestSidecarNameConflict.*|TestReinvocationWithForeignMutator|TestSidecarsStayNativeAfterAStrippingWebhook|TestInvalidRenderIsDeniedByGraft|TestHugePodInjected|TestServerSideDryRun|TestGuarantee.*|TestExport.*|TestRestrictedNamespaceEveryTemplate|TestPodSecuritySplitRegistration|TestPodLevelResourcesStayValid|TestWindowsPodSkipped)$$
# E2E_API_TIMEOUT bounds one API-level run. On 1.36 and later the export
# tests run too, and took 16 minutes of the suite at load average 40 on
# the 2-core machine; on the oldest they skip and a run takes 2 minutes.
E2E_API_TIMEOUT ?= 45m
# ACCEPTANCE_SAMPLE is how many Pods of the acceptance corpus a matrix run
# sends (x 8 profiles x 3 Pod Security levels).
ACCEPTANCE_SAMPLE ?= 30
E2E_MATRIX_DIR := $(CACHE)/e2e-matrix

.PHONY: e2e-matrix e2e-oldest

## e2e-matrix: the API-level suites and an acceptance sample against every Kubernetes minor the README claims (each kube-apiserver built once); writes docs/reference/kubernetes-versions.md.
e2e-matrix: e2e-graft $(E2E_ETCD) $(HELM)
	@mkdir -p $(E2E_MATRIX_DIR)
	@set -e; for v in $(E2E_MATRIX_VERSIONS); do \
		$(MAKE) --no-print-directory $(E2E_BIN)/kube-apiserver-$$v; \
		$(MAKE) --no-print-directory e2e-api-run E2E_API_VERSION=$$v E2E_API_JSON=$(E2E_MATRIX_DIR)/$$v.json || true; \
	done
	cd e2e && $(GO) run ./cmd/versionmatrix -command 'make e2e-matrix' -out ../docs/reference/kubernetes-versions.md \
		$(foreach v,$(E2E_MATRIX_VERSIONS),$(v)=$(abspath $(E2E_MATRIX_DIR))/$(v).json)

## e2e-oldest: the API-level suites and an acceptance sample against the oldest Kubernetes the README claims (part of make test).
e2e-oldest: e2e-graft $(E2E_ETCD) $(HELM) $(E2E_BIN)/kube-apiserver-$(E2E_OLDEST_VERSION)
	@$(MAKE) --no-print-directory e2e-api-run E2E_API_VERSION=$(E2E_OLDEST_VERSION)

# One API-level run against kube-apiserver E2E_API_VERSION, its go test
# -json stream kept in E2E_API_JSON when that is set.
e2e-api-run:
	@echo "e2e: the API-level suites on kube-apiserver $(E2E_API_VERSION)"
	cd e2e && GRAFT_E2E_API_ONLY=1 GRAFT_E2E_KUBE_VERSION=$(E2E_API_VERSION) \
		GRAFT_E2E_KUBE_APISERVER=$(E2E_BIN)/kube-apiserver-$(E2E_API_VERSION) GRAFT_E2E_ETCD=$(E2E_ETCD) \
		GRAFT_E2E_GRAFT=$(E2E_GRAFT) GRAFT_E2E_HELM=$(HELM) GRAFT_ACCEPTANCE_PODS=$(ACCEPTANCE_SAMPLE) \
		CGO_ENABLED=1 $(GO) test -race -count=1 -timeout $(E2E_API_TIMEOUT) -run '$(E2E_MATRIX_RUN)|^TestAcceptanceCorpus$$' \
		$(if $(E2E_API_JSON),-json) . ./acceptance $(if $(E2E_API_JSON),> $(E2E_API_JSON).tmp; status=$$?; mv $(E2E_API_JSON).tmp $(E2E_API_JSON); exit $$status,-v)

# A matrix version's kube-apiserver, from its builder module; the harness's
# own version has the rule above. nice: it builds beside whatever else runs.
$(E2E_BIN)/kube-apiserver-v1.%:
	@set -e; v=v1.$*; minor=$(word 1,$(subst ., ,$*)); dir=e2e/tools/matrix/kubernetes-1.$$minor; \
	[ -f $$dir/go.mod ] || { echo "no builder module $$dir: run e2e/tools/matrix/builder.sh $$v" >&2; exit 1; }; \
	grep -Eq "k8s.io/kubernetes $$v( |$$)" $$dir/go.mod || { echo "$$dir/go.mod does not pin k8s.io/kubernetes $$v" >&2; exit 1; }; \
	mkdir -p $(@D); echo "building kube-apiserver $$v (once; cached in $(E2E_BIN))"; \
	cd $$dir && nice $(GO) build -trimpath -ldflags "$(call k8s-ldflags,$$v,$$minor)" -o $@.tmp k8s.io/kubernetes/cmd/kube-apiserver; \
	mv $@.tmp $@
