package e2e

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	regv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/internal/names"
)

// goldenDir holds the engine's golden corpus: each <case>.in.json review
// and the <case>.golden.json the engine answers it with.
var goldenDir = filepath.Join(repoRoot, "inject", "testdata", "golden")

type goldenIn struct {
	Profile string `json:"profile"`
	// Prepare marks a case whose input is the engine's own output with
	// another step's edits: it takes that other step to reproduce.
	Prepare json.RawMessage `json:"prepare"`
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

// goldenCase is a golden a real create can reproduce: a Pod CREATE the
// engine injects, with the profile it is served with ("" for the default).
type goldenCase struct {
	profile  string
	in, want *corev1.Pod
}

func goldenInjections(t *testing.T) map[string]goldenCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.in.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden inputs in %s: %v", goldenDir, err)
	}
	cfg, err := suiteConfig()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]goldenCase{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".in.json")
		var in goldenIn
		var g goldenOut
		readJSON(t, f, &in)
		readJSON(t, filepath.Join(goldenDir, name+".golden.json"), &g)
		r := in.Review.Request
		if g.Decision != "inject" || r.Operation != "CREATE" || r.DryRun || in.Prepare != nil {
			continue
		}
		if _, ok := cfg.Profiles[in.Profile]; in.Profile != "" && !ok {
			// A profile of the engine's test fixture templates, which the
			// suite's graft does not load.
			continue
		}
		var inPod, wantPod corev1.Pod
		if err := json.Unmarshal(r.Object, &inPod); err != nil {
			t.Fatalf("%s: object: %v", name, err)
		}
		if err := json.Unmarshal(g.Patched, &wantPod); err != nil {
			t.Fatalf("%s: patched: %v", name, err)
		}
		out[name] = goldenCase{in.Profile, &inPod, &wantPod}
	}
	if len(out) == 0 {
		t.Fatal("no golden case injects a Pod")
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
// Cases on the default profile go through graft's shipped registration in
// a namespace labelled graft.dev/inject=enabled. Cases on a named profile
// go through a webhook on /inject/<profile> for a namespace of their own.
// The API server defaults every Pod it stores, graft's additions included,
// so the golden's patched Pod is put through the same defaulting (a dry-run
// create in a namespace graft does not serve) before the two are compared.
func TestInjectedPodMatchesGolden(t *testing.T) {
	cases := goldenInjections(t)
	reference := newNamespace(t, "e2e-golden-reference", nil)
	nsOf := map[string]string{"": optedIn(t, "e2e-golden")}
	var hooks []regv1.MutatingWebhook
	for _, c := range cases {
		if _, ok := nsOf[c.profile]; ok {
			continue
		}
		ns := newNamespace(t, "e2e-golden-"+c.profile, nil)
		nsOf[c.profile] = ns
		h := scopedGraftWebhook(c.profile+".golden.e2e.graft.dev", ns, "/inject/"+c.profile)
		// The goldens test what graft does with a Pod, not which Pods the
		// shipped conditions send it (hostNetwork ones are not).
		h.MatchConditions = nil
		hooks = append(hooks, h)
	}
	if len(hooks) > 0 {
		registerWebhooks(t, "graft-e2e-golden", hooks...)
	}
	for profile, ns := range nsOf {
		if err := env.waitInjecting(t.Context(), ns); err != nil {
			t.Fatalf("profile %q never injected in %s: %v", profile, ns, err)
		}
	}

	for _, name := range slices.Sorted(maps.Keys(cases)) {
		c := cases[name]
		t.Run(name, func(t *testing.T) {
			if c.in.Spec.Resources != nil {
				needsKubernetes(t, 34, "pod-level resources (beta and on by default in 1.34)")
			}
			injected := nsOf[c.profile]
			// Some inputs exercise the engine on Pods no API server would
			// accept (a mount of an undeclared volume, say): those cannot be
			// reproduced by a real create.
			if _, err := env.client.CoreV1().Pods(reference).Create(t.Context(), placed(c.in, name, reference),
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
				t.Skipf("the golden's input is not a valid Pod, so no real create can reproduce it: %v", err)
			}
			_, err := env.client.CoreV1().Pods(injected).Create(t.Context(), placed(c.in, name, injected), metav1.CreateOptions{})
			if refusal, ok := refusedInACluster[name]; ok {
				if err == nil || !strings.Contains(err.Error(), refusal) {
					t.Fatalf("create the golden input: %v; want graft's refusal %q", err, refusal)
				}
				return
			}
			if err != nil {
				t.Fatalf("create the golden input: %v", err)
			}
			got := getPod(t, injected, name)
			want, err := env.client.CoreV1().Pods(reference).Create(t.Context(), placed(c.want, name, reference),
				metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				t.Fatalf("the API server refuses the golden's patched Pod: %v", err)
			}
			if !isInjected(want) {
				t.Fatalf("golden's patched Pod has no %s annotation", names.Status)
			}
			if d := cmp.Diff(comparable(want), comparable(got)); d != "" {
				t.Fatalf("stored Pod differs from the golden (-golden +stored):\n%s", d)
			}
		})
	}
}

// refusedInACluster are goldens whose single call a real create does not
// reproduce, with graft's refusal there. token-user-volume-unmounted's Pod
// has an emptyDir named like the ServiceAccount plugin's volume that no
// container mounts: the golden is a call where nothing shows the plugin
// mounts the token. In a namespace whose ServiceAccount automounts, the
// plugin has mounted that very volume (the first kube-api-access-* one,
// whatever its kind) into every container before graft's call; graft
// mirrors only a projected one, so its sidecar gets no mount, the
// plugin's re-run mounts the emptyDir into it, and graft's second call
// finds its sidecar holding a mount that is not graft's render
// (docs/concepts/guarantee.md) and refuses the Pod.
var refusedInACluster = map[string]string{
	"token-user-volume-unmounted": `Pod already has init container "graft-agent", which graft did not inject: its volumeMounts[1] differs from template agent's`,
}

// placed is p renamed to name in namespace ns, as the API server needs it.
func placed(p *corev1.Pod, name, ns string) *corev1.Pod {
	p = p.DeepCopy()
	p.Name, p.GenerateName, p.Namespace = name, "", ns
	return p
}

// comparable keeps what graft and the user decide: labels, annotations and
// the spec. Identity, timestamps and field ownership are the server's, the
// node the scheduler may have bound the stored Pod to by now is the
// scheduler's, and what the ServiceAccount plugin adds is the plugin's: its token volume's name
// (kube-api-access- and five random characters) is made the same here, and
// volumes and volume mounts, which Kubernetes does not read in order, are
// compared sorted, since the plugin appends to them before graft in the
// real create but after graft's additions in the reference.
func comparable(p *corev1.Pod) any {
	p = p.DeepCopy()
	p.Spec.NodeName = ""
	if i := slices.IndexFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return strings.HasPrefix(v.Name, "kube-api-access-") }); i >= 0 {
		old := p.Spec.Volumes[i].Name
		p.Spec.Volumes[i].Name = "kube-api-access-*"
		for _, l := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
			for j := range l {
				for k := range l[j].VolumeMounts {
					if l[j].VolumeMounts[k].Name == old {
						l[j].VolumeMounts[k].Name = "kube-api-access-*"
					}
				}
			}
		}
	}
	slices.SortFunc(p.Spec.Volumes, func(a, b corev1.Volume) int { return strings.Compare(a.Name, b.Name) })
	for _, l := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for j := range l {
			slices.SortFunc(l[j].VolumeMounts, func(a, b corev1.VolumeMount) int { return strings.Compare(a.MountPath, b.MountPath) })
		}
	}
	return struct {
		Labels, Annotations map[string]string
		Spec                corev1.PodSpec
	}{p.Labels, p.Annotations, p.Spec}
}
