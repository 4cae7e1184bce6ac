package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/graftdev/graft/bench/corpus"
)

// nextImage is the agent image of the revision "next"; "default" keeps
// the template's own.
const nextImage = "registry.local/agent:2.0.0"

// revisionsConfig is the golden configuration as the top-level revision
// "default", the same with the agent image nextImage as "next", and tags
// stable (default) and canary (10% next).
func revisionsConfig(tb testing.TB) RevisionsConfig {
	tb.Helper()
	set := testTemplates(tb)
	next := goldenConfig()
	next.Revision = "next"
	for name, p := range next.Profiles {
		if p.Templates[0] == "agent" {
			p.Params = map[string]map[string]string{"agent": {"image": nextImage}}
			next.Profiles[name] = p
		}
	}
	return RevisionsConfig{
		Revisions: []RevisionConfig{{Config: goldenConfig(), Templates: set}, {Config: next, Templates: set}},
		Tags: []TagConfig{
			{Name: "stable", Split: []Share{{Revision: "default", Percent: 100}}},
			{Name: "canary", Split: []Share{{Revision: "next", Percent: 10}, {Revision: "default", Percent: 90}}},
		},
	}
}

func newTestRevisions(tb testing.TB, c RevisionsConfig) *Revisions {
	tb.Helper()
	r, err := NewRevisions(c)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// podReview is a CREATE review of a one-container Pod with metadata meta.
func revPodReview(namespace string, meta map[string]any) []byte {
	return corpus.Marshal("", "7c5e2b1a-0000-4000-8000-000000000001", "CREATE", namespace, map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": meta,
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}}},
	})
}

// ownedBy is the metadata of a Pod that a ReplicaSet of uid controls.
func ownedBy(uid, name string) map[string]any {
	return map[string]any{"name": name, "ownerReferences": []any{
		map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "not-the-controller"},
		map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": true},
	}}
}

func randomUID(r *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.IntN(1<<16), r.IntN(1<<12), r.IntN(1<<12), r.Uint64()&(1<<48-1))
}

func admitRevision(t *testing.T, r *Revisions, body []byte, o Options) Result {
	t.Helper()
	_, res, err := r.Admit(nil, body, o)
	if err != nil {
		t.Fatalf("admit %+v: %v", o, err)
	}
	return res
}

func TestRevisionsRoute(t *testing.T) {
	r := newTestRevisions(t, revisionsConfig(t))
	body := corpus.Review(corpus.Small)
	for _, tt := range []struct{ route, want string }{
		{"", "default"}, {"default", "default"}, {"next", "next"}, {"stable", "default"},
	} {
		out, res, err := r.Admit(nil, body, Options{Revision: tt.route})
		if err != nil {
			t.Fatal(err)
		}
		if res.Revision != tt.want || res.Decision != DecisionInject {
			t.Errorf("route %q: revision %q (%v), want %q", tt.route, res.Revision, res.Decision, tt.want)
		}
		if got := strings.Contains(string(responsePatch(t, out)), nextImage); got != (tt.want == "next") {
			t.Errorf("route %q: patch has %s = %v", tt.route, nextImage, got)
		}
	}
	if _, _, err := r.Admit([]byte("keep"), body, Options{Revision: "nope"}); !errors.Is(err, ErrUnknownRevision) {
		t.Errorf("unknown route: %v, want ErrUnknownRevision", err)
	}
	if _, _, err := r.Admit(nil, body, Options{Revision: "next", Profile: "nope"}); !errors.Is(err, ErrUnknownProfile) {
		t.Errorf("unknown profile: %v, want ErrUnknownProfile", err)
	}
	if _, _, err := r.Admit(nil, []byte("{"), Options{Revision: "canary"}); !errors.Is(err, ErrMalformed) {
		t.Errorf("malformed body on a split: %v, want ErrMalformed", err)
	}
	if got := strings.Join(r.Names(), ","); got != "canary,default,next,stable" {
		t.Errorf("Names() = %s", got)
	}
}

// TestSplitAgreesPerOwner: every Pod of one controller gets the same
// revision, and about the tag's share of owners get the canary.
func TestSplitAgreesPerOwner(t *testing.T) {
	r := newTestRevisions(t, revisionsConfig(t))
	rng := rand.New(rand.NewPCG(13, 13))
	const owners = 2000
	canary := 0
	for i := range owners {
		uid := randomUID(rng)
		first := ""
		for j := range 3 {
			// Pods of one owner differ in name and namespace label noise.
			meta := ownedBy(uid, fmt.Sprintf("web-%d-%d", i, j))
			res := admitRevision(t, r, revPodReview("shop", meta), Options{Revision: "canary"})
			if j == 0 {
				first = res.Revision
			} else if res.Revision != first {
				t.Fatalf("owner %s: Pod %d on %s, Pod 0 on %s", uid, j, res.Revision, first)
			}
		}
		if first == "next" {
			canary++
		}
	}
	// A fixed seed, so this pins the hash's spread rather than sampling
	// it: 10% of 2000 is 200, the standard deviation 13.4.
	if canary < 150 || canary > 250 {
		t.Errorf("%d of %d owners on the canary, want about 200", canary, owners)
	}
}

// TestSplitWithoutOwner: Pods without a controller agree per namespace
// and generateName, else per name.
func TestSplitWithoutOwner(t *testing.T) {
	r := newTestRevisions(t, revisionsConfig(t))
	seen := map[string]int{}
	for i := range 200 {
		stem := fmt.Sprintf("job-%d-", i)
		a := admitRevision(t, r, revPodReview("batch", map[string]any{"generateName": stem, "name": stem + "a"}), Options{Revision: "canary"})
		b := admitRevision(t, r, revPodReview("batch", map[string]any{"generateName": stem}), Options{Revision: "canary"})
		if a.Revision != b.Revision {
			t.Fatalf("generateName %s: %s and %s", stem, a.Revision, b.Revision)
		}
		seen[a.Revision]++
		named := revPodReview("batch", map[string]any{"name": stem})
		if x, y := admitRevision(t, r, named, Options{Revision: "canary"}), admitRevision(t, r, named, Options{Revision: "canary"}); x.Revision != y.Revision {
			t.Fatalf("name %s: %s then %s", stem, x.Revision, y.Revision)
		}
	}
	if seen["next"] == 0 || seen["default"] == 0 {
		t.Errorf("200 stems all on one revision: %v", seen)
	}
}

// TestBucketSpread: the buckets of keys that differ only in a counter
// (generateName stems, sequential uids) are uniform: a chi-square test
// over 20,000 keys in 100 buckets (99 degrees of freedom: mean 99,
// standard deviation 14; 190 is beyond six of them).
func TestBucketSpread(t *testing.T) {
	for _, key := range []func(i int) routing{
		func(i int) routing { return routing{namespace: "shop", generateName: fmt.Sprintf("web-%d-", i)} },
		func(i int) routing { return routing{ownerUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i)} },
	} {
		const n, buckets = 20000, 100
		var counts [buckets]int
		for i := range n {
			rt := key(i)
			counts[rt.bucket()]++
		}
		chi2 := 0.0
		const want = float64(n) / buckets
		for _, c := range counts {
			chi2 += (float64(c) - want) * (float64(c) - want) / want
		}
		if chi2 > 190 {
			t.Errorf("chi-square %.1f over %d buckets (e.g. %v)", chi2, buckets, counts[:10])
		}
	}
}

func TestPodRevision(t *testing.T) {
	c := revisionsConfig(t)
	for i := range c.Revisions {
		p := c.Revisions[i].Config.Profiles["lenient"]
		p.PodRevision = true
		c.Revisions[i].Config.Profiles["lenient"] = p
	}
	r := newTestRevisions(t, c)
	pod := func(labels map[string]any) []byte {
		return revPodReview("shop", map[string]any{"name": "p", "labels": labels})
	}
	for _, tt := range []struct {
		name, profile, route string
		labels               map[string]any
		want                 string
		decision             Decision
	}{
		{"pod chooses a revision", "lenient", "", map[string]any{"graft.dev/rev": "next"}, "next", DecisionInject},
		{"pod chooses a tag", "lenient", "next", map[string]any{"graft.dev/rev": "stable"}, "default", DecisionInject},
		{"no label: the route decides", "lenient", "next", map[string]any{"app": "x"}, "next", DecisionInject},
		{"an empty label is no choice", "lenient", "next", map[string]any{"graft.dev/rev": ""}, "next", DecisionInject},
		// The label is graft's, and the profile does not let a Pod set it.
		{"profile does not allow it", "agent", "", map[string]any{"graft.dev/rev": "next"}, "default", DecisionDeny},
		{"unknown value is denied", "lenient", "", map[string]any{"graft.dev/rev": "nope"}, "default", DecisionDeny},
		{"unknown value on an opted-out Pod", "lenient", "", map[string]any{"graft.dev/rev": "nope", "graft.dev/inject": "false"}, "default", DecisionSkip},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, res, err := r.Admit(nil, pod(tt.labels), Options{Profile: tt.profile, Revision: tt.route})
			if err != nil {
				t.Fatal(err)
			}
			if res.Revision != tt.want || res.Decision != tt.decision {
				t.Errorf("revision %q, decision %v; want %q, %v", res.Revision, res.Decision, tt.want, tt.decision)
			}
			if tt.decision == DecisionDeny {
				var rv struct {
					Response struct {
						UID     string `json:"uid"`
						Allowed bool   `json:"allowed"`
						Status  struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"status"`
					} `json:"response"`
				}
				if err := json.Unmarshal(out, &rv); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				resp := rv.Response
				wantReason, wantMsg := ReasonTemplateSelection, []string{`graft.dev/rev="nope"`, "canary, default, next, stable"}
				if tt.profile == "agent" {
					wantReason, wantMsg = ReasonConflict, []string{"the Pod sets label graft.dev/rev, which is graft's to set"}
				}
				if resp.Allowed || resp.Status.Code != 400 || resp.UID == "" || res.Reason != wantReason {
					t.Errorf("deny: %+v, reason %v", resp, res.Reason)
				}
				for _, m := range wantMsg {
					if !strings.Contains(resp.Status.Message, m) {
						t.Errorf("deny message %q, want it to hold %q", resp.Status.Message, m)
					}
				}
				ex, err := r.Explain(pod(tt.labels), Options{Profile: tt.profile, Revision: tt.route})
				if err != nil || ex.Result.Decision != DecisionDeny || ex.Message != resp.Status.Message || ex.Patch != nil {
					t.Errorf("explain: %+v, %v", ex, err)
				}
			}
		})
	}
}

func TestRevisionsExplainAndFail(t *testing.T) {
	r := newTestRevisions(t, revisionsConfig(t))
	rng := rand.New(rand.NewPCG(1, 2))
	byRevision := map[string]Selection{}
	for len(byRevision) < 2 {
		body := revPodReview("shop", ownedBy(randomUID(rng), "p"))
		ex, err := r.Explain(body, Options{Revision: "canary"})
		if err != nil {
			t.Fatal(err)
		}
		s := ex.Selection
		wantNext := s.Bucket < 10
		if s.Tag != "canary" || s.FromPod || s.Bucket < 0 || s.Revision != ex.Result.Revision || (s.Revision == "next") != wantNext {
			t.Fatalf("selection %+v, result revision %q", s, ex.Result.Revision)
		}
		byRevision[s.Revision] = s
		_, res, err := r.Fail(nil, body, Options{Revision: "canary"}, ReasonOverload)
		if err != nil || res.Revision != s.Revision || res.Decision != DecisionFailOpen {
			t.Fatalf("fail: %+v, %v; explain chose %s", res, err, s.Revision)
		}
	}
	ex, err := r.Explain(corpus.Review(corpus.Small), Options{Revision: "next"})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Selection{Revision: "next", Bucket: -1}); ex.Selection != want {
		t.Errorf("direct: %+v, want %+v", ex.Selection, want)
	}
}

func TestNewRevisionsValidates(t *testing.T) {
	split := func(s ...Share) []TagConfig { return []TagConfig{{Name: "t", Split: s}} }
	for _, tt := range []struct {
		name string
		edit func(c *RevisionsConfig)
		want string
	}{
		{"no revisions", func(c *RevisionsConfig) { c.Revisions = nil }, "no revisions"},
		{"duplicate revision", func(c *RevisionsConfig) { c.Revisions[1].Config.Revision = "default" }, `revision "default" defined twice`},
		{"bad revision name", func(c *RevisionsConfig) { c.Revisions[1].Config.Revision = "Next" }, `"Next" is not a valid name`},
		{"other profiles", func(c *RevisionsConfig) { delete(c.Revisions[1].Config.Profiles, "lenient") }, "every revision must have the same profiles"},
		{"bad revision config", func(c *RevisionsConfig) { c.Revisions[1].Config.DefaultProfile = "nope" }, `revision "next": invalid configuration: default profile "nope"`},
		{"tag named like a revision", func(c *RevisionsConfig) { c.Tags = []TagConfig{{Name: "next", Split: []Share{{"default", 100}}}} }, "taken"},
		{"tag named like a tag", func(c *RevisionsConfig) { c.Tags = append(c.Tags, c.Tags[0]) }, "taken"},
		{"bad tag name", func(c *RevisionsConfig) { c.Tags = []TagConfig{{Name: "a.b", Split: []Share{{"default", 100}}}} }, "not a valid name"},
		{"empty tag", func(c *RevisionsConfig) { c.Tags = split() }, "names no revision"},
		{"unknown revision", func(c *RevisionsConfig) { c.Tags = split(Share{"gone", 100}) }, `"gone" is not a revision`},
		{"tag of a tag", func(c *RevisionsConfig) { c.Tags = append(c.Tags, split(Share{"canary", 100})...) }, `"canary" is not a revision`},
		{"share twice", func(c *RevisionsConfig) { c.Tags = split(Share{"next", 50}, Share{"next", 50}) }, "listed twice"},
		{"negative", func(c *RevisionsConfig) { c.Tags = split(Share{"next", -10}, Share{"default", 110}) }, "not between 0 and 100"},
		{"sum", func(c *RevisionsConfig) { c.Tags = split(Share{"next", 10}, Share{"default", 80}) }, "add up to 90"},
		{"unknown default", func(c *RevisionsConfig) { c.Default = "gone" }, `default revision "gone"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := revisionsConfig(t)
			tt.edit(&c)
			_, err := NewRevisions(c)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrConfig mentioning %q", err, tt.want)
			}
		})
	}
	// A share of 0% is kept in the configuration but serves nothing.
	c := revisionsConfig(t)
	c.Tags = split(Share{"next", 0}, Share{"default", 100})
	c.Default = "t"
	r := newTestRevisions(t, c)
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		if res := admitRevision(t, r, revPodReview("shop", ownedBy(randomUID(rng), "p")), Options{}); res.Revision != "default" {
			t.Fatalf("a 0%% share served a Pod")
		}
	}
}

func TestScanRouting(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		want       routing
	}{
		{"owner and label",
			`{"request":{"namespace":"ns","object":{"metadata":{"name":"p","labels":{"a":"b","graft.dev/rev":"canary"},` +
				`"ownerReferences":[{"uid":"u1"},{"uid":"u2","controller":true},{"uid":"u3","controller":true}]},"spec":{}}}}`,
			routing{namespace: "ns", name: "p", ownerUID: "u2", rev: "canary"}},
		{"namespace after the object, from the object",
			`{"request":{"object":{"metadata":{"generateName":"g-","namespace":"objns","labels":null,"ownerReferences":null}},"namespace":null}}`,
			routing{namespace: "objns", generateName: "g-"}},
		{"request namespace wins",
			`{"request":{"object":{"metadata":{"namespace":"objns"}},"namespace":"reqns"}}`,
			routing{namespace: "reqns"}},
		{"non-string label value and null controller",
			`{"request":{"object":{"metadata":{"labels":{"graft.dev/rev":1},"ownerReferences":[{"uid":"u","controller":null}]}}}}`,
			routing{}},
		{"null object", `{"request":{"object":null}}`, routing{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got routing
			if err := scanRouting(tt.body, &got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{``, `[`, `{"request":{"object":{"metadata":{"labels":[1]}}}}`, `{"request":{"namespace":1}}`,
		`{"request":{"object":{"metadata":{"ownerReferences":[{"controller":"yes"}]}}}}`} {
		var got routing
		if err := scanRouting(bad, &got); !errors.Is(err, ErrMalformed) {
			t.Errorf("%q: %v, want ErrMalformed", bad, err)
		}
	}
	// It stops after the metadata once the namespace is known: what
	// follows is never read.
	var got routing
	if err := scanRouting(`{"request":{"namespace":"ns","object":{"metadata":{"name":"p"},"spec":{garbage`, &got); err != nil || got.name != "p" {
		t.Errorf("early stop: %+v, %v", got, err)
	}
}

// FuzzRevisionsAdmit feeds arbitrary bytes through a split tag and a
// profile that lets Pods choose: never a panic; a well-formed response
// or ErrMalformed; and every Pod of one owner on one revision, whichever
// way its metadata was read.
func FuzzRevisionsAdmit(f *testing.F) {
	for _, name := range []string{corpus.Small, corpus.Skip, corpus.Large} {
		f.Add(corpus.Review(name))
	}
	f.Add(revPodReview("shop", map[string]any{"name": "p", "labels": map[string]any{"graft.dev/rev": "next"}}))
	f.Add(revPodReview("shop", map[string]any{"generateName": "g-", "ownerReferences": []any{map[string]any{"uid": "u", "controller": true}}}))
	f.Add([]byte(`{"request":{"namespace":"ns","object":{"metadata":{"ownerReferences":[{"uid":"u","controller":true}]}}}}`))
	c := revisionsConfig(f)
	for i := range c.Revisions {
		p := c.Revisions[i].Config.Profiles["lenient"]
		p.PodRevision = true
		c.Revisions[i].Config.Profiles["lenient"] = p
	}
	r := newTestRevisions(f, c)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, o := range []Options{{Revision: "canary"}, {Revision: "canary", Profile: "lenient"}} {
			resp, _, err := r.Admit(nil, body, o)
			switch {
			case err != nil && !errors.Is(err, ErrMalformed):
				t.Fatalf("%+v: error is not ErrMalformed: %v", o, err)
			case err != nil && len(resp) != 0:
				t.Fatalf("%+v: response written along with an error", o)
			case err == nil && !json.Valid(resp):
				t.Fatalf("%+v: invalid response JSON: %s", o, resp)
			}
		}
		// Whatever the owner search returns is the body's own text.
		var fast routing
		if text := string(body); findOwner(text, &fast) {
			if _, inside := offsetIn(text, fast.ownerUID); !inside {
				t.Fatalf("owner %q is not a span of the body", fast.ownerUID)
			}
		}
	})
}

// TestFindOwnerAgreesWithScan: on reviews as the API server writes them
// (encoding/json of the API types), with every place another
// ownerReferences key can hide in one (labels and annotations so named, a
// last-applied-configuration holding one, userInfo.extra so named), the
// owner search finds exactly the owner the metadata scan reads.
func TestFindOwnerAgreesWithScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 500 {
		pod := corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "shop"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
		}
		if rng.IntN(2) == 0 {
			pod.Labels = map[string]string{"ownerReferences": `[{"uid":"label","controller":true}]`}
		}
		if rng.IntN(2) == 0 {
			pod.Annotations = map[string]string{
				"ownerReferences": "x",
				"kubectl.kubernetes.io/last-applied-configuration": `{"metadata":{"ownerReferences":[{"uid":"applied","controller":true}]}}`,
			}
		}
		for j := range rng.IntN(3) {
			pod.OwnerReferences = append(pod.OwnerReferences, metav1.OwnerReference{
				APIVersion: "apps/v1", Kind: "ReplicaSet", Name: fmt.Sprintf("rs-%d", j), UID: types.UID(randomUID(rng)),
				Controller: ptrTo(rng.IntN(2) == 0), BlockOwnerDeletion: ptrTo(true),
			})
		}
		raw, err := json.Marshal(&pod)
		if err != nil {
			t.Fatal(err)
		}
		rv := admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{
				UID: types.UID(fmt.Sprintf("u-%d", i)), Kind: metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
				Namespace: "shop", Operation: admissionv1.Create,
				UserInfo: authenticationv1.UserInfo{Username: "u", Extra: map[string]authenticationv1.ExtraValue{"ownerReferences": {"extra"}}},
				Object:   runtime.RawExtension{Raw: raw},
			},
		}
		body, err := json.Marshal(&rv)
		if err != nil {
			t.Fatal(err)
		}
		var fast, full routing
		found := findOwner(string(body), &fast)
		if err := scanRouting(string(body), &full); err != nil {
			t.Fatal(err)
		}
		if found != (full.ownerUID != "") || fast.ownerUID != full.ownerUID {
			t.Fatalf("owner search %q (%v), metadata scan %q, in\n%s", fast.ownerUID, found, full.ownerUID, body)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
