// Package deploy holds graft's Kubernetes manifests: a kustomize base
// (base/), components (components/ha, components/monitoring), overlays
// (overlays/cert-manager, overlays/self-signed, overlays/ha), examples
// (examples/) and a Helm chart (helm/graft). Apply an overlay with
// `kubectl apply -k deploy/overlays/<name>`, or install the chart with
// `helm install graft deploy/helm/graft -n graft-system --create-namespace`.
//
// The package has no code of its own. Its tests build every overlay with
// kustomize and check what a platform team relies on (selectors,
// exclusions, failure policies, the Pod's security settings); check that
// the webhooks are what `graft webhooks` generates from config.yaml, and
// tie the profile lists of config.yaml, the webhooks and the
// ValidatingAdmissionPolicy to each other and to graft's defaults; check the policy's reading of
// graft.dev/status against Pods the real engine injected; run the graft
// binary exactly as the Deployment describes it; and build that binary with
// the Dockerfile's own `go build` command. For the chart they run helm (lint,
// render twice, refuse bad values) and compare what it renders with what
// kustomize builds, object by object; for the alert rules they run promtool
// (check, and the unit tests of testdata/alerts_test.yaml). `make unit`
// builds helm and promtool and tells the tests where they are.
package deploy
