// Package export compiles a graft profile into Kubernetes admission
// policies that inject what the webhook injects, with no webhook: a
// MutatingAdmissionPolicy (JSON Patch) and its binding, and a
// ValidatingAdmissionPolicy that checks the Pod's graft annotations with
// the engine's messages and guarantees the final state.
//
// A template compiles when its fragment's control flow depends only on
// enum and bool parameters (one variant per combination, chosen in CEL),
// its ranges over list parameters produce text inside one value, and every
// parameter lands where YAML reads its text as is. The compiler runs the
// fragment's parse tree with parameters as holes, renders holes as markers
// to see where they land, proves each hole's characters inert there, checks
// the compiled form against real unrollings and the template engine, and
// refuses anything else with the template, fragment line and reason.
//
// JSON Patch values are written as plain CEL maps and lists: kube-apiserver
// 1.36 panics converting a list holding typed Object initializers
// (kubernetes#142181).
package export
