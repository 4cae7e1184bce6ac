// Package deploy holds graft's Kubernetes manifests: a kustomize base
// (base/), components (components/ha) and overlays (overlays/cert-manager,
// overlays/self-signed, overlays/ha). Apply an overlay with
// `kubectl apply -k deploy/overlays/<name>`.
//
// The package has no code of its own: its tests build every overlay with
// kustomize and check what a platform team relies on (selectors,
// exclusions, failure policies, the Pod's security settings), that the
// manifests agree with graft's configuration and built-in templates, and
// that the Dockerfile's build command produces a static, working binary.
package deploy
