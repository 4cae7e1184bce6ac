package deploy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// findCall matches `.find('<regex>')` and `.findAll('<regex>')` in CEL.
var findCall = regexp.MustCompile(`\.(find|findAll)\('((?:[^'\\]|\\.)*)'\)`)

// celUnquote undoes a single-quoted CEL string's escapes.
var celUnquote = strings.NewReplacer(`\\`, `\`, `\'`, `'`, `\"`, `"`)

// injectedNames evaluates the policy's injectedNames variable in Go: each
// `status.find(A).findAll(B).filter(n, n != K)` term, concatenated.
func injectedNames(t *testing.T, expr, status string) []string {
	t.Helper()
	calls := findCall.FindAllStringSubmatch(expr, -1)
	if len(calls) == 0 || len(calls)%2 != 0 {
		t.Fatalf("injectedNames %q: want pairs of find/findAll", expr)
	}
	var names []string
	for i := 0; i < len(calls); i += 2 {
		if calls[i][1] != "find" || calls[i+1][1] != "findAll" {
			t.Fatalf("injectedNames %q: want find then findAll", expr)
		}
		section := regexp.MustCompile(celUnquote.Replace(calls[i][2])).FindString(status)
		key := regexp.MustCompile(`^"\w+"`).FindString(celUnquote.Replace(calls[i][2]))
		for _, n := range regexp.MustCompile(celUnquote.Replace(calls[i+1][2])).FindAllString(section, -1) {
			if n != key {
				names = append(names, n)
			}
		}
	}
	return names
}

// TestPolicyReadsGraftStatus: the policy's reading of graft.dev/status finds,
// in a Pod the real engine injected for each shipped profile, exactly the
// containers the engine added; so a change to the annotation's format cannot
// silently make the policy refuse every injected Pod (or accept any).
func TestPolicyReadsGraftStatus(t *testing.T) {
	cfg := loadConfig(t)
	set, err := templates.LoadDir("base/templates")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := inject.New(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	out := kustomize(t, "base")
	vap := one[admissionv1.ValidatingAdmissionPolicy](t, out, "ValidatingAdmissionPolicy", "graft-injection-required")
	var expr string
	for _, v := range vap.Spec.Variables {
		if v.Name == "injectedNames" {
			expr = v.Expression
		}
	}

	const pod = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"apps"},` +
		`"spec":{"containers":[{"name":"app","image":"app:1"}]}}`
	for name := range cfg.Profiles {
		t.Run(name, func(t *testing.T) {
			review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",` +
				`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
				`"namespace":"apps","operation":"CREATE","object":` + pod + `}}`
			resp, res, err := engine.Admit(nil, []byte(review), inject.Options{Profile: name})
			if err != nil {
				t.Fatal(err)
			}
			if res.Decision != inject.DecisionInject {
				t.Fatalf("decision %v (%v), want inject", res.Decision, res.Reason)
			}
			var r struct {
				Response struct{ Patch []byte } `json:"response"`
			}
			if err := json.Unmarshal(resp, &r); err != nil {
				t.Fatal(err)
			}
			patch, err := jsonpatch.DecodePatch(r.Response.Patch)
			if err != nil {
				t.Fatal(err)
			}
			patched, err := patch.Apply([]byte(pod))
			if err != nil {
				t.Fatal(err)
			}
			var p corev1.Pod
			if err := json.Unmarshal(patched, &p); err != nil {
				t.Fatal(err)
			}
			status := p.Annotations["graft.dev/status"]
			if status == "" {
				t.Fatal("the engine wrote no graft.dev/status")
			}
			var added []string
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				if c.Name != "app" {
					added = append(added, fmt.Sprintf("%q", c.Name))
				}
			}
			got := injectedNames(t, expr, status)
			if len(added) == 0 || !sameSet(got, added) {
				t.Errorf("the policy reads %v from %s; the engine added %v", got, status, added)
			}
		})
	}
}

// matchesCall matches `.matches('<regex>')` in CEL.
var matchesCall = regexp.MustCompile(`\.matches\('((?:[^'\\]|\\.)*)'\)`)

// TestPolicyAgreesOnEmptyTemplateSelection: a Pod whose graft.dev/templates
// selects nothing is skipped by the engine, and only such a Pod is excused
// by the policy's selectsNoTemplates.
func TestPolicyAgreesOnEmptyTemplateSelection(t *testing.T) {
	cfg := loadConfig(t)
	set, err := templates.LoadDir("base/templates")
	if err != nil {
		t.Fatal(err)
	}
	engine, err := inject.New(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	vap := one[admissionv1.ValidatingAdmissionPolicy](t, kustomize(t, "base"), "ValidatingAdmissionPolicy", "graft-injection-required")
	var re *regexp.Regexp
	for _, v := range vap.Spec.Variables {
		if m := matchesCall.FindStringSubmatch(v.Expression); v.Name == "selectsNoTemplates" && m != nil {
			re = regexp.MustCompile(celUnquote.Replace(m[1]))
		}
	}
	if re == nil {
		t.Fatal("no selectsNoTemplates variable with a matches() call")
	}
	for _, value := range []string{"", " ", ",", " , ,", "agent", " agent ,", "agent,agent"} {
		annotations, _ := json.Marshal(map[string]string{"graft.dev/templates": value})
		pod := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"apps","annotations":` + string(annotations) +
			`},"spec":{"containers":[{"name":"app","image":"app:1"}]}}`
		review := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1",` +
			`"kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},` +
			`"namespace":"apps","operation":"CREATE","object":` + pod + `}}`
		_, res, err := engine.Admit(nil, []byte(review), inject.Options{})
		if err != nil {
			t.Fatal(err)
		}
		skipped := res.Decision == inject.DecisionSkip && res.Reason == inject.ReasonNoTemplates
		if excused := re.MatchString(value); excused != skipped {
			t.Errorf("graft.dev/templates=%q: engine skips for no templates = %v, policy excuses = %v", value, skipped, excused)
		}
	}
}
