// Package boundaries has no code: its tests hold the written boundaries
// between graft's packages (which may import what, and where unsafe code
// may live), so that a change crossing one fails in `go test` rather than
// in review.
package boundaries
