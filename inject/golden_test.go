package inject

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

var update = flag.Bool("update", false, "rewrite inject/testdata/golden/*.golden.json from the engine's output")

// goldenConfig is the configuration the golden corpus is written against:
// the shipped profiles plus a few that exercise options, with "agent" as
// the default so built-in catalogue changes do not churn every golden.
func goldenConfig() Config {
	cfg := DefaultConfig()
	// The corpus sets the built-in templates' parameters, the ones the
	// shipped profiles lock beyond images too: here they lock images only
	// (guard_test.go holds the shipped locks).
	for name, p := range cfg.Profiles {
		p.LockedParams = []string{"*.image"}
		cfg.Profiles[name] = p
	}
	cfg.DefaultProfile = "agent"
	cfg.Profiles["agent"] = Profile{Templates: []string{"agent"}}
	cfg.Profiles["lenient"] = Profile{Templates: []string{"agent"}, OnInvalidParams: InvalidUseDefault}
	cfg.Profiles["hostnet"] = Profile{Templates: []string{"agent"}, InjectHostNetwork: true}
	cfg.Profiles["classic"] = Profile{Templates: []string{"classic-sidecar"}}
	cfg.Profiles["token-aware"] = Profile{Templates: []string{"token-aware", "agent"}}
	cfg.Profiles["keep"] = Profile{Templates: []string{"agent"}, OnConflict: ConflictKeep}
	cfg.Profiles["keep-otel-agent-log-shipper"] = Profile{Templates: []string{"otel-agent", "log-shipper"}, OnConflict: ConflictKeep}
	return cfg
}

// goldenCase is one input file: a review and the profile to serve it with.
type goldenCase struct {
	Description string          `json:"description"`
	Profile     string          `json:"profile,omitempty"`
	Prepare     *goldenPrepare  `json:"prepare,omitempty"`
	Review      json.RawMessage `json:"review"`
}

// goldenPrepare makes the case's object the Pod graft itself left: the
// review's object admitted with Profile, then Patch (RFC 6902, another
// admission step's doing) applied. So a case carries a status the engine
// wrote, digests included, that no hand edits or template change can make
// stale.
type goldenPrepare struct {
	Profile string          `json:"profile,omitempty"`
	Patch   json.RawMessage `json:"patch,omitempty"`
}

// review returns the review to admit: c.Review, prepared if asked.
func (c goldenCase) review(t *testing.T, e *Engine) []byte {
	t.Helper()
	if c.Prepare == nil {
		return c.Review
	}
	obj := applyResponse(t, c.Review, mustAdmit(t, e, c.Review, Options{Profile: c.Prepare.Profile}))
	if len(c.Prepare.Patch) > 0 {
		obj = applyTestPatch(t, obj, c.Prepare.Patch)
	}
	return reReview(t, c.Review, obj)
}

// goldenOutput is what a golden file records.
type goldenOutput struct {
	Description string `json:"description"`
	Decision    string `json:"decision"`
	Reason      string `json:"reason"`
	PatchOps    int    `json:"patchOps"`
	// Input is a prepared case's object, as admitted.
	Input    json.RawMessage `json:"input,omitempty"`
	Response json.RawMessage `json:"response"`
	Patch    json.RawMessage `json:"patch,omitempty"`
	Patched  json.RawMessage `json:"patched,omitempty"`
}

func loadGoldenCases(t *testing.T) map[string]goldenCase {
	t.Helper()
	files, err := filepath.Glob("testdata/golden/*.in.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs: %v", err)
	}
	out := map[string]goldenCase{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c goldenCase
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".in.json")] = c
	}
	return out
}

func TestGolden(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	cases := loadGoldenCases(t)
	if len(cases) < 30 {
		t.Errorf("golden corpus has %d cases, want at least 30", len(cases))
	}
	// A golden without an input is stale.
	goldens, _ := filepath.Glob("testdata/golden/*.golden.json")
	for _, g := range goldens {
		name := strings.TrimSuffix(filepath.Base(g), ".golden.json")
		if _, ok := cases[name]; !ok {
			if *update {
				os.Remove(g)
				continue
			}
			t.Errorf("%s: golden without input (run go test ./inject -run TestGolden -update)", g)
		}
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := goldenRun(t, e, c)
			path := filepath.Join("testdata/golden", name+".golden.json")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("missing golden (run go test ./inject -run TestGolden -update): %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from %s (inspect, then run with -update):\n%s", path, got)
			}
		})
	}
}

// goldenRun admits the case and checks what must hold for every case: the
// response is well formed and echoes uid and version, any patch applies
// and yields a valid Pod, a second admission of the result patches
// nothing, and the output is deterministic.
func goldenRun(t *testing.T, e *Engine, c goldenCase) []byte {
	t.Helper()
	o := Options{Profile: c.Profile}
	review := c.review(t, e)
	resp, res, err := e.Admit(nil, review, o)
	if err != nil {
		t.Fatalf("admit: %v", err)
	}
	again, _, _ := e.Admit(nil, review, o)
	if !bytes.Equal(resp, again) {
		t.Fatalf("non-deterministic output:\n%s\n%s", resp, again)
	}
	checkEnvelope(t, review, resp)
	out := goldenOutput{Description: c.Description, Decision: res.Decision.String(), Reason: res.Reason.String(), PatchOps: res.PatchOps}
	if c.Prepare != nil {
		out.Input = indent(t, reviewObject(t, review))
	}
	out.Response = indent(t, resp)
	if patch := responsePatch(t, resp); patch != nil {
		if res.Decision != DecisionInject {
			t.Fatalf("patch with decision %v", res.Decision)
		}
		var ops []json.RawMessage
		if err := json.Unmarshal(patch, &ops); err != nil || len(ops) != res.PatchOps {
			t.Fatalf("patch has %d ops (%v), result says %d", len(ops), err, res.PatchOps)
		}
		patched := applyResponse(t, review, resp)
		var pod corev1.Pod
		if err := json.Unmarshal(patched, &pod); err != nil {
			t.Fatalf("patched object is not a Pod: %v", err)
		}
		out.Patch, out.Patched = indent(t, patch), indent(t, patched)
		second := reReview(t, review, patched)
		resp2, res2, err := e.Admit(nil, second, o)
		if err != nil || responsePatch(t, resp2) != nil || res2.Reason != ReasonAlreadyInjected {
			t.Fatalf("second admission is not a no-op: %v %+v\n%s", err, res2, resp2)
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func indent(t *testing.T, raw []byte) json.RawMessage {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	return buf.Bytes()
}

// checkEnvelope asserts the response answers the request.
func checkEnvelope(t *testing.T, review, resp []byte) {
	t.Helper()
	var in, out struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Request    struct {
			UID string `json:"uid"`
		} `json:"request"`
		Response *struct {
			UID     string `json:"uid"`
			Allowed *bool  `json:"allowed"`
		} `json:"response"`
	}
	if err := json.Unmarshal(review, &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(resp, &out); err != nil {
		t.Fatalf("response not JSON: %v\n%s", err, resp)
	}
	if out.APIVersion != in.APIVersion || out.Kind != "AdmissionReview" || out.Response == nil ||
		out.Response.UID != in.Request.UID || out.Response.Allowed == nil {
		t.Fatalf("response does not answer the request: %s", resp)
	}
}

// reReview replaces the object of review with obj.
func reReview(t *testing.T, review, obj []byte) []byte {
	t.Helper()
	var rv map[string]json.RawMessage
	if err := json.Unmarshal(review, &rv); err != nil {
		t.Fatal(err)
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(rv["request"], &req); err != nil {
		t.Fatal(err)
	}
	req["object"] = obj
	rv["request"], _ = json.Marshal(req)
	b, _ := json.Marshal(rv)
	return b
}
