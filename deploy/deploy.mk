# Container image and deploy/ upkeep. -included by the Makefile, which
# defines VERSION.

IMAGE  ?= ghcr.io/graftdev/graft
DOCKER ?= docker

.PHONY: image deploy-templates deploy-webhooks

## image: build the container image $(IMAGE):$(VERSION) (needs a Docker engine).
image:
	@command -v $(DOCKER) >/dev/null 2>&1 || { echo "make image: $(DOCKER) not found; building the image needs a Docker engine" >&2; exit 1; }
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
