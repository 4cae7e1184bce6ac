package export

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/fixture"
)

// The policies read graft.dev/status with reRecord, reEntry and reAppText
// (RE2, as CEL's matches and findAll): every record graft writes must
// match, entry for entry, and nothing graft does not write.
func TestRecordExpressionsReadWhatGraftWrites(t *testing.T) {
	record, entry, app := regexp.MustCompile(reRecord), regexp.MustCompile(reEntry), regexp.MustCompile(reAppText)
	r := rand.New(rand.NewPCG(14, 2))
	names := []string{"graft-agent", "app", "containers", "env", "volumeMounts", "graft.dev/injected", "x"}
	list := func() []string {
		var out []string
		for range r.IntN(3) {
			out = append(out, names[r.IntN(len(names))])
		}
		return out
	}
	for i := range 500 {
		var st inject.Status
		for j := range r.IntN(4) {
			ts := inject.TemplateStatus{Name: fmt.Sprintf("t%d", j), Revision: "default", Digest: "0123456789abcdef",
				InitContainers: list(), Containers: list(), Volumes: list(), ImagePullSecrets: list(), Annotations: list(), Labels: list()}
			for range r.IntN(3) {
				if ts.AppContainers == nil {
					ts.AppContainers = map[string]inject.AppEdits{}
				}
				e := inject.AppEdits{Env: list(), VolumeMounts: list()}
				if len(e.Env)+len(e.VolumeMounts) > 0 {
					ts.AppContainers[names[r.IntN(len(names))]] = e
				}
			}
			st.Templates = append(st.Templates, ts)
		}
		v := st.Value()
		if !record.MatchString(v) {
			t.Fatalf("record %d does not match reRecord: %s", i, v)
		}
		entries := entry.FindAllString(v, -1)
		if len(entries) != len(st.Templates) {
			t.Fatalf("record %d: %d entries found, want %d: %s", i, len(entries), len(st.Templates), v)
		}
		for j, e := range entries {
			if got := strings.Split(e, `"`)[3]; got != st.Templates[j].Name {
				t.Fatalf("record %d entry %d: name %q, want %q", i, j, got, st.Templates[j].Name)
			}
			if n := len(app.FindAllString(e, -1)); n != len(st.Templates[j].AppContainers) {
				t.Fatalf("record %d entry %d: %d app containers found, want %d: %s", i, j, n, len(st.Templates[j].AppContainers), e)
			}
		}
	}
	for _, v := range []string{
		`{"templates":["agent"],"initContainers":["graft-agent"]}`, // version 1
		`{"version":2,"templates":[{"name":"a\"b","revision":"default","digest":"0"}]}`,
		`{"version":2, "templates":[]}`,
		`{"version":2,"templates":[{"revision":"default","name":"a","digest":"0"}]}`,
		`{"version":3}`,
		"stale", "{}",
	} {
		if record.MatchString(v) {
			t.Errorf("reRecord matches %s, which graft does not write", v)
		}
	}
}

// Each template's digest table holds the engine's digest for the
// profile's values, and one entry per combination of its enum and bool
// parameters.
func TestDigestTables(t *testing.T) {
	cfg := fixture.Config()
	for _, name := range []string{"mesh-proxy", "otel-agent", "agent"} {
		p, err := newProfile(cfg, builtinSet(t), name)
		if err != nil {
			t.Fatal(err)
		}
		var digests string
		for _, v := range p.digestVars() {
			if v.name == "digests" {
				digests = v.expr
			}
		}
		for _, tn := range p.order {
			tmpl := p.tmpls[tn].tmpl
			if want := inject.TemplateDigest(tmpl, p.defaults[tn]); !strings.Contains(digests, `"`+want+`"`) {
				t.Errorf("%s: no digest %s for the profile's values in %s", tn, want, digests)
			}
			combos := 1
			for i := range tmpl.Params {
				if n := len(domain(&tmpl.Params[i])); n > 0 && combos*n <= maxDigestCombos {
					combos *= n
				}
			}
			if got := strings.Count(digests, `": "`); combos > 1 && got < combos {
				t.Errorf("%s: %d table entries, want at least %d", tn, got, combos)
			}
		}
	}
}
