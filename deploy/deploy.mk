# Container images and deploy/ upkeep. -included by the Makefile, which
# defines GO, BIN, VERSION, REVISION, BUILDTIME and LDFLAGS.

IMAGE  ?= ghcr.io/graftdev/graft
DOCKER ?= docker

# make images writes graft's image without Docker or a registry, as an OCI
# layout archive (internal/ociimage): one image per platform in
# IMAGE_PLATFORMS, each the static binary built for it with the same flags
# as make build. IMAGE_TAG defaults to the build's version; the image is
# dated by the commit, so the same commit gives the same digest.
IMAGE_TAG       ?= $(VERSION)
# linux/arm64 does not build yet: sonic's loader (github.com/bytedance/
# sonic/loader v0.5.3, internal/abi) has no arm64 definitions.
IMAGE_PLATFORMS ?= linux/amd64
IMAGES_DIR      ?= $(BIN)/images
GRAFT_IMAGE     := $(IMAGES_DIR)/graft.tar

.PHONY: image images deploy-templates deploy-webhooks

## images: build graft's image $(IMAGE):$(IMAGE_TAG) for IMAGE_PLATFORMS into bin/images/graft.tar (an OCI layout archive: ctr images import, skopeo copy oci-archive:); no Docker needed.
images:
	@mkdir -p $(IMAGES_DIR)
	@set -e; bins=; for p in $(IMAGE_PLATFORMS); do \
		os=$${p%%/*}; arch=$${p#*/}; out=$(IMAGES_DIR)/$$os-$$arch/graft; \
		echo "go build $$p -> $$out"; \
		GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $$out ./cmd/graft; \
		bins="$$bins $$p=$$out"; \
	done; \
	$(GO) run ./internal/ociimage/cmd/graft-image archive --out $(GRAFT_IMAGE) \
		--ref $(IMAGE):$(IMAGE_TAG) --created '$(or $(BUILDTIME),1970-01-01T00:00:00Z)' \
		--version '$(VERSION)' --revision '$(REVISION)' $$bins | tee $(IMAGES_DIR)/graft.ref

## image: build the container image $(IMAGE):$(VERSION) with the Dockerfile (needs a Docker engine; make images needs none).
image:
	@command -v $(DOCKER) >/dev/null 2>&1 || { echo "make image: $(DOCKER) not found; building the image needs a Docker engine (make images does not)" >&2; exit 1; }
	$(DOCKER) build --build-arg VERSION=$(VERSION) -t $(IMAGE):$(VERSION) .

## deploy-templates: copy the built-in templates into deploy/base/templates.
deploy-templates:
	cp templates/builtin/*.yaml deploy/base/templates/
	@echo "List any new file under configMapGenerator graft-templates in deploy/base/kustomization.yaml."

CHART := deploy/helm/graft

.PHONY: chart-files

## chart-files: copy into the Helm chart the files it shares with the rest of deploy/ (templates, alerts, dashboard, the guarantee's assembly and template checks).
chart-files:
	rm -f $(CHART)/files/templates/*.yaml
	cp templates/builtin/*.yaml $(CHART)/files/templates/
	cp deploy/components/monitoring/prometheusrule.yaml deploy/components/monitoring/graft-dashboard.json $(CHART)/files/
	$(GO) run ./cmd/graft guarantee --chart-template > $(CHART)/templates/_guarantee.tpl
	$(GO) run ./cmd/graft guarantee --checks > $(CHART)/files/guarantee-checks.json

## deploy-webhooks: regenerate the webhook registrations and guarantee policies deploy/ ships from their configurations.
deploy-webhooks:
	@for dir in deploy/base deploy/examples/revisions; do \
		echo "graft webhooks --config $$dir/config.yaml > $$dir/mutatingwebhookconfiguration.yaml"; \
		$(GO) run ./cmd/graft webhooks --config $$dir/config.yaml > $$dir/mutatingwebhookconfiguration.yaml.tmp && \
		mv $$dir/mutatingwebhookconfiguration.yaml.tmp $$dir/mutatingwebhookconfiguration.yaml || exit 1; \
		echo "graft guarantee --config $$dir/config.yaml --templates-dir deploy/base/templates > $$dir/validatingadmissionpolicy.yaml"; \
		$(GO) run ./cmd/graft guarantee --config $$dir/config.yaml --templates-dir deploy/base/templates > $$dir/validatingadmissionpolicy.yaml.tmp && \
		mv $$dir/validatingadmissionpolicy.yaml.tmp $$dir/validatingadmissionpolicy.yaml || exit 1; \
	done
