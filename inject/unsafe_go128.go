//go:build go1.28

package inject

// This file stops the build on Go 1.28 and later, on purpose.
//
// sonic v1.15.5 runs its native skipper only on Go < 1.28 and beyond that
// quietly falls back to a portable one; unsafe.go reads sonic's ast.Node
// through a mirror verified with v1.15.5 on Go 1.26. Rather than switch
// implementations unseen, the build names the work: take a sonic release
// that supports the new Go, check its ast/node.go against the mirror in
// unsafe.go (fields, _V_RAW, what p and l hold), update sonicVerified,
// run the inject benchmarks, then raise the bound in this file's build
// constraint.
const _ int = "inject/unsafe_go128.go: sonic's native path ends at Go 1.28; re-check the ast.Node mirror in inject/unsafe.go before building with this Go"
