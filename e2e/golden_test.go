package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/e2e/internal/cluster"
)

// goldenDir holds the engine's golden corpus: each <case>.in.json review
// and the <case>.golden.json the engine answers it with.
var goldenDir = filepath.Join(repoRoot, "inject", "testdata", "golden")

type goldenIn struct {
	Profile string `json:"profile"`
	Review  struct {
		Request struct {
			Operation string          `json:"operation"`
			DryRun    bool            `json:"dryRun"`
			Object    json.RawMessage `json:"object"`
		} `json:"request"`
	} `json:"review"`
}

type goldenOut struct {
	Decision string          `json:"decision"`
	Patched  json.RawMessage `json:"patched"`
}

// goldenInjections lists the golden cases a real create can reproduce: Pod
// CREATEs on the default profile that the engine injects.
func goldenInjections(t *testing.T) map[string]struct{ in, want *corev1.Pod } {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.in.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs in %s: %v", goldenDir, err)
	}
	out := map[string]struct{ in, want *corev1.Pod }{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".in.json")
		var in goldenIn
		var g goldenOut
		readJSON(t, f, &in)
		readJSON(t, filepath.Join(goldenDir, name+".golden.json"), &g)
		r := in.Review.Request
		if g.Decision != "inject" || in.Profile != "" || r.Operation != "CREATE" || r.DryRun {
			continue
		}
		var inPod, wantPod corev1.Pod
		if err := json.Unmarshal(r.Object, &inPod); err != nil {
			t.Fatalf("%s: object: %v", name, err)
		}
		if err := json.Unmarshal(g.Patched, &wantPod); err != nil {
			t.Fatalf("%s: patched: %v", name, err)
		}
		out[name] = struct{ in, want *corev1.Pod }{&inPod, &wantPod}
	}
	if len(out) == 0 {
		t.Fatal("no golden case injects a Pod on the default profile")
	}
	return out
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Scenario 1: in an opted-in namespace a Pod is created injected, and the
// stored Pod equals what the engine's golden says for the same input.
//
// The API server defaults every Pod it stores, graft's additions included,
// so the golden's patched Pod is put through the same defaulting (a dry-run
// create in a namespace graft does not serve) before the two are compared.
func TestInjectedPodMatchesGolden(t *testing.T) {
	injected := optedIn(t, "e2e-golden")
	reference := newNamespace(t, "e2e-golden-reference", nil)
	cases := goldenInjections(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range cases {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			in := placed(c.in, name, injected)
			want := placed(c.want, name, reference)
			// Some inputs exercise the engine on Pods no API server would
			// accept (a mount of an undeclared volume, say): those cannot be
			// reproduced by a real create.
			if _, err := env.client.CoreV1().Pods(reference).Create(t.Context(), placed(c.in, name, reference),
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Skipf("the golden's input is not a valid Pod, so no real create can reproduce it: %v", err)
			}
			if _, err := env.client.CoreV1().Pods(injected).Create(t.Context(), in, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create the golden input: %v", err)
			}
			got := getPod(t, injected, name)
			defaulted, err := env.client.CoreV1().Pods(reference).Create(t.Context(), want, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatalf("the API server refuses the golden's patched Pod: %v", err)
			}
			if !isInjected(defaulted) {
				t.Fatalf("golden's patched Pod has no %s annotation", cluster.StatusAnnotation)
			}
			if d := cmp.Diff(comparable(defaulted), comparable(got)); d != "" {
				t.Fatalf("stored Pod differs from the golden (-golden +stored):\n%s", d)
			}
		})
	}
}

// placed is p renamed to name in namespace ns, as the API server needs it.
func placed(p *corev1.Pod, name, ns string) *corev1.Pod {
	p = p.DeepCopy()
	p.Name, p.GenerateName, p.Namespace = name, "", ns
	return p
}

// comparable keeps what graft and the user decide: labels, annotations and
// the spec. Identity, timestamps and field ownership are the server's.
func comparable(p *corev1.Pod) any {
	return struct {
		Labels, Annotations map[string]string
		Spec                corev1.PodSpec
	}{p.Labels, p.Annotations, p.Spec}
}
