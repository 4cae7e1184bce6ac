package export

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/graftdev/graft/templates"
)

func TestScratchChecks(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]TemplateCheck{}
	for _, n := range set.Names() {
		tmpl, _ := set.Get(n)
		tc, err := Checks(tmpl)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		out[n] = tc
	}
	b, _ := json.MarshalIndent(out, "", " ")
	os.WriteFile("/tmp/checks.json", b, 0o644)
}

func TestScratchSA(t *testing.T) { t.Log(SAProjected()) }
