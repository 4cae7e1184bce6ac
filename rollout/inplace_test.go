package rollout

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/offline"
)

// testEngine serves testdata/config.yaml: revision r1 and revisions that
// each change one thing from it.
func testEngine(t *testing.T) *inject.Revisions {
	t.Helper()
	e, err := offline.NewEngine("testdata/config.yaml", "testdata/templates", "", "")
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// runningPod is a Pod with one app container, injected with profile at
// revision as the webhook would, with the uid and resourceVersion the API
// server gives it; edit changes it before it runs.
func runningPod(t *testing.T, e *inject.Revisions, profile, revision string, edit func(map[string]any)) audit.Pod {
	t.Helper()
	app := audit.Pod{Namespace: "apps", Name: "web-1", JSON: []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","namespace":"apps",` +
		`"uid":"0b4e2a43-7d4e-4c39-9d8a-2d7c1c0f0001","resourceVersion":"1234","labels":{"app":"web"}},` +
		`"spec":{"containers":[{"name":"app","image":"registry.invalid/app:1","resources":{}}]}}`)}
	ex, err := e.Explain(audit.Review(app), inject.Options{Profile: profile, Revision: revision})
	if err != nil {
		t.Fatal(err)
	}
	if ex.Result.Decision != inject.DecisionInject {
		t.Fatalf("injecting at %s: %s %s", revision, ex.Result.Decision, ex.Result.Reason)
	}
	out, err := applyPatch(app.JSON, ex.Patch)
	if err != nil {
		t.Fatal(err)
	}
	doc := mustDecode(out)
	if edit != nil {
		edit(doc)
	}
	return podOf(t, doc)
}

func podOf(t *testing.T, doc map[string]any) audit.Pod {
	t.Helper()
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	meta := object(doc, "metadata")
	p := audit.Pod{Namespace: str(meta["namespace"]), Name: str(meta["name"]), JSON: raw, Labels: map[string]string{}}
	for k, v := range object(meta, "labels") {
		p.Labels[k] = str(v)
	}
	p.Status, p.HasStatus = object(meta, "annotations")[names.Status].(string)
	for _, l := range []string{"initContainers", "containers"} {
		p.Containers = append(p.Containers, containerNames(list(object(doc, "spec"), l))...)
	}
	return p
}

func namespace(profile, revision string) audit.Namespace {
	return audit.Namespace{Name: "apps", Labels: map[string]string{names.Inject: profile, names.Revision: revision}}
}

// Every refusal an in-place upgrade can give, each from a Pod and a
// revision move that differ in that one way, and the upgrades it allows.
func TestUpgraderPlan(t *testing.T) {
	e := testEngine(t)
	u := NewUpgrader(e)
	a := audit.New(e)
	setAnnotation := func(k, v string) func(map[string]any) {
		return func(doc map[string]any) {
			object(object(doc, "metadata"), "annotations")[k] = v
		}
	}
	tests := []struct {
		name              string
		profile, from, to string
		edit              func(map[string]any)
		want              Refusal
		images            []ImageChange
	}{
		{name: "sidecar image only", profile: "agent", from: "r1", to: "r2",
			images: []ImageChange{{"graft-agent", "registry.invalid/agent:1.0", "registry.invalid/agent:2.0"}}},
		{name: "sidecar image, app containers edited by graft", profile: "otel", from: "r1", to: "r2",
			images: []ImageChange{{"graft-otel-agent", "registry.invalid/otel:1.0", "registry.invalid/otel:2.0"}}},
		{name: "sidecar args", profile: "agent", from: "r1", to: "r3", want: RefuseContainerChanged},
		{name: "another template", profile: "agent", from: "r1", to: "r4", want: RefuseTemplatesChanged},
		{name: "app containers' env", profile: "otel", from: "r1", to: "r5", want: RefusePodChanged},
		{name: "a plain container's image", profile: "plain", from: "r1", to: "r2", want: RefuseNotNativeSidecar},
		{name: "image edited after admission", profile: "agent", from: "r1", to: "r2", want: RefuseImageEdited,
			edit: func(doc map[string]any) {
				list(object(doc, "spec"), "initContainers")[0].(map[string]any)["image"] = "mirror.invalid/agent:1.0"
			}},
		{name: "parameters changed since admission", profile: "agent", from: "r1", to: "r2", want: RefuseRecordNotReproducible,
			edit: setAnnotation(names.ParamAnnotation("agent", "logLevel"), "debug")},
		{name: "revision no longer served", profile: "agent", from: "r1", to: "r2", want: RefuseRevisionNotServed,
			edit: func(doc map[string]any) {
				ann := object(object(doc, "metadata"), "annotations")
				ann[names.Status] = strings.Replace(ann[names.Status].(string), `"revision":"r1"`, `"revision":"r0"`, 1)
			}},
		{name: "terminating", profile: "agent", from: "r1", to: "r2", want: RefuseTerminating,
			edit: func(doc map[string]any) { object(doc, "metadata")["deletionTimestamp"] = "2026-11-25T12:00:00Z" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := runningPod(t, e, tt.profile, tt.from, tt.edit)
			ns := namespace(tt.profile, tt.to)
			v, err := a.Classify(ns, pod)
			if err != nil {
				t.Fatal(err)
			}
			if v.Class != audit.Stale {
				t.Fatalf("audit: %s/%s (%s), want stale", v.Class, v.Cause, v.Detail)
			}
			up, refusal, why := u.Plan(ns, pod, v)
			if refusal != tt.want {
				t.Fatalf("refusal %q (%s), want %q", refusal, why, tt.want)
			}
			if tt.want != "" {
				if up != nil || why == "" {
					t.Errorf("refused with an upgrade %v or without a reason %q", up, why)
				}
				return
			}
			if !reflect.DeepEqual(up.Images, tt.images) || up.From != tt.from || up.To != tt.to {
				t.Errorf("upgrade %s %v, want %s -> %s %v", up, up.Images, tt.from, tt.to, tt.images)
			}
			after, err := applyPatch(pod.JSON, up.Patch)
			if err != nil {
				t.Fatal(err)
			}
			upgraded := podOf(t, mustDecode(after))
			if got, err := a.Classify(ns, upgraded); err != nil || got.Class != audit.Current {
				t.Errorf("after the upgrade the audit says %s/%s (%s), %v; want current", got.Class, got.Cause, got.Detail, err)
			}
			if upgraded.Labels[names.Injected] != tt.to {
				t.Errorf("label %s = %q, want %q", names.Injected, upgraded.Labels[names.Injected], tt.to)
			}
			// The app container is untouched, and nothing but the images,
			// the record and the label changed.
			before, now := mustDecode(pod.JSON), mustDecode(after)
			if !reflect.DeepEqual(list(object(before, "spec"), "containers"), list(object(now, "spec"), "containers")) {
				t.Error("the app container changed")
			}
			for _, c := range list(object(before, "spec"), "initContainers") {
				delete(c.(map[string]any), "image")
			}
			for _, c := range list(object(now, "spec"), "initContainers") {
				delete(c.(map[string]any), "image")
			}
			for _, d := range []map[string]any{before, now} {
				delete(object(object(d, "metadata"), "annotations"), names.Status)
				delete(object(object(d, "metadata"), "labels"), names.Injected)
			}
			if !reflect.DeepEqual(before, now) {
				t.Error("the patch changed more than the sidecar images, the record and the label")
			}
		})
	}
}

// The patch carries the Pod's uid and resourceVersion: it applies to the
// Pod it was computed for and to no later version of it.
func TestUpgradePatchTestsTheVersion(t *testing.T) {
	e := testEngine(t)
	pod := runningPod(t, e, "agent", "r1", nil)
	ns := namespace("agent", "r2")
	v, err := audit.New(e).Classify(ns, pod)
	if err != nil {
		t.Fatal(err)
	}
	up, refusal, why := NewUpgrader(e).Plan(ns, pod, v)
	if up == nil {
		t.Fatalf("refused: %s: %s", refusal, why)
	}
	later := mustDecode(pod.JSON)
	object(later, "metadata")["resourceVersion"] = "1240"
	raw, err := json.Marshal(later)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := applyPatch(raw, up.Patch); err == nil {
		t.Error("the patch applied to a later version of the Pod")
	}
}

// Pods the audit does not call stale for a changed revision are refused
// before any engine work.
func TestCauseRefusal(t *testing.T) {
	tests := []struct {
		v    audit.Verdict
		want Refusal
	}{
		{audit.Verdict{Class: audit.Stale, Cause: audit.CauseRevision}, ""},
		{audit.Verdict{Class: audit.Missing, Cause: audit.CauseWithoutGraft}, RefuseNotInjected},
		{audit.Verdict{Class: audit.Stale, Cause: audit.CauseLegacyRecord}, RefuseLegacyRecord},
		{audit.Verdict{Class: audit.Stale, Cause: audit.CauseRevisionGone}, RefuseRevisionNotServed},
		{audit.Verdict{Class: audit.Stale, Cause: audit.CauseWouldBeDenied}, RefuseWouldBeDenied},
		{audit.Verdict{Class: audit.Stale, Cause: audit.CauseTemplateAbsent}, RefuseTemplatesChanged},
		{audit.Verdict{Class: audit.Stale, Cause: audit.CauseIncompleteCopy}, RefuseIncomplete},
	}
	for _, tt := range tests {
		if got, _ := causeRefusal(tt.v); got != tt.want {
			t.Errorf("%s/%s: %q, want %q", tt.v.Class, tt.v.Cause, got, tt.want)
		}
	}
	seen := map[Refusal]bool{}
	for _, r := range Refusals() {
		if seen[r] {
			t.Errorf("refusal %s listed twice", r)
		}
		seen[r] = true
	}
}
