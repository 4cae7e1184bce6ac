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
// the webhooks and the guarantee policies are what `graft webhooks` and
// `graft guarantee` generate from config.yaml and the templates, and tie
// the profiles of config.yaml to graft's defaults; run the guarantee
// policies with kube-apiserver's CEL environment against Pods the real
// engine injected, stripped and spoofed; run the graft
// binary exactly as the Deployment describes it; and build that binary with
// the Dockerfile's own `go build` command. For the chart they run helm (lint,
// render twice, refuse bad values) and compare what it renders with what
// kustomize builds, object by object; for the alert rules they run promtool
// (check, and the unit tests of testdata/alerts_test.yaml). `make unit`
// builds helm and promtool and tells the tests where they are.
package deploy
