// Package refdocs generates the references that must not drift from the
// code: docs/reference/configuration.md and the Helm chart's schema of its
// config value from the configuration file's Go types (config, inject),
// docs/reference/templates.md from the template format's (templates), and
// docs/reference/names.md from the names users see (internal/names).
// Keys, types and descriptions come from the types and their doc comments,
// defaults from the running defaults, and each template function's example
// is rendered by the template engine itself. A key or template function
// without a doc comment is an error.
//
// Regenerate with `go generate ./internal/refdocs` (or `make docs`); the
// package's test fails while a generated file is stale.
package refdocs

//go:generate go run ./gen -root ../..
