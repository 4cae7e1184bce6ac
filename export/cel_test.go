package export

import (
	"testing"

	"github.com/google/cel-go/cel"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// TestExpressionsParse: every CEL expression of every built-in profile's
// policies, under either onConflict, parses, as kube-apiserver would when they are created (the
// e2e suite creates them; this catches a broken string literal without a
// cluster).
func TestExpressionsParse(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	env, err := cel.NewEnv(cel.OptionalTypes())
	if err != nil {
		t.Fatal(err)
	}
	cfg := inject.DefaultConfig()
	// Each profile under onConflict: keep too, whose status writes the
	// kept list.
	for name, p := range cfg.Profiles {
		p.OnConflict = inject.ConflictKeep
		cfg.Profiles[name+"-keep"] = p
	}
	for name := range cfg.Profiles {
		out, err := Export(cfg, set, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var exprs []string
		if m := out.Mutating; m != nil {
			for _, v := range m.Spec.Variables {
				exprs = append(exprs, v.Expression)
			}
			for _, mc := range m.Spec.MatchConditions {
				exprs = append(exprs, mc.Expression)
			}
			for _, mu := range m.Spec.Mutations {
				if mu.JSONPatch != nil {
					exprs = append(exprs, mu.JSONPatch.Expression)
				}
			}
		}
		for _, v := range out.Validating {
			for _, x := range v.Spec.Variables {
				exprs = append(exprs, x.Expression)
			}
			for _, mc := range v.Spec.MatchConditions {
				exprs = append(exprs, mc.Expression)
			}
			for _, val := range v.Spec.Validations {
				exprs = append(exprs, val.Expression)
				if val.MessageExpression != "" {
					exprs = append(exprs, val.MessageExpression)
				}
			}
		}
		for _, x := range exprs {
			if _, iss := env.Parse(x); iss.Err() != nil {
				t.Errorf("profile %s: %v\n%s", name, iss.Err(), x)
			}
		}
	}
}
