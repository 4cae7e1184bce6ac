// Package deploy holds graft's Kubernetes manifests: a kustomize base
// (base/), the ha component (components/ha), overlays (overlays/cert-manager,
// overlays/self-signed, overlays/ha) and examples (examples/). Apply an
// overlay with `kubectl apply -k deploy/overlays/<name>`.
//
// The package has no code of its own. Its tests build every overlay with
// kustomize and check what a platform team relies on (selectors,
// exclusions, failure policies, the Pod's security settings); check that
// the webhooks are what `graft webhooks` generates from config.yaml, and
// tie the profile lists of config.yaml, the webhooks and the
// ValidatingAdmissionPolicy to each other and to graft's defaults; check the policy's reading of
// graft.dev/status against Pods the real engine injected; run the graft
// binary exactly as the Deployment describes it; and build that binary with
// the Dockerfile's own `go build` command.
package deploy
