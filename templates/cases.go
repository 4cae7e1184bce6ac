package templates

import "maps"

// Case is one set of parameter overrides lint renders a template with.
type Case struct {
	// Label says which values the case tries, as lint's messages do.
	Label string
	// Overrides are the parameter values the case sets; the rest keep
	// their defaults. Empty for the defaults' case.
	Overrides map[string]string
}

// Cases are the renders lint checks t in: its defaults, each parameter
// alone at each of its bounds, then every bounded parameter at its min and
// at its max. The tests that hand each built-in template's configuration to
// the program that reads it (Envoy's API, the Collector, Vault's agent)
// render every one of them, so a parameter value lint accepts is one the
// program accepts too.
func (t *Template) Cases() []Case {
	lc := lintCases(t)
	out := make([]Case, len(lc))
	for i, c := range lc {
		out[i] = Case{Label: c.label, Overrides: maps.Clone(c.overrides)}
	}
	return out
}
