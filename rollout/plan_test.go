package rollout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/graftdev/graft/audit"
)

// Each class and cause the audit gives, on each kind of owner: what the
// plan does with the owner.
func TestPlanClassesByOwnerKind(t *testing.T) {
	verdicts := []struct {
		class audit.Class
		cause string
		// fixed: a restart brings the Pod to what graft injects now.
		fixed, listed bool
	}{
		{audit.Stale, audit.CauseRevision, true, true},
		{audit.Stale, audit.CauseTemplateAbsent, true, true},
		{audit.Stale, audit.CauseLegacyRecord, true, true},
		{audit.Stale, audit.CauseRevisionGone, true, true},
		{audit.Stale, audit.CauseIncompleteCopy, true, true},
		{audit.Stale, audit.CauseWouldBeDenied, false, true},
		{audit.Missing, audit.CauseWithoutGraft, true, true},
		{audit.Missing, audit.CauseLabelledAfter, true, true},
		{audit.Missing, audit.CauseNotCalled, false, true},
		{audit.Missing, audit.CauseWouldBeDenied, false, true},
		{audit.Current, "", false, false},
		{audit.Conflict, "", false, false},
		{audit.Spoofed, audit.CauseAbsent, false, false},
		{audit.OptedOut, "", false, false},
		{audit.NotSelected, "namespace-not-selected", false, false},
	}
	kinds := []struct {
		kind        string
		restartable bool
	}{
		{"Deployment", true}, {"StatefulSet", true}, {"DaemonSet", true},
		{"ReplicaSet", false}, {"Job", false}, {"CronJob", false}, {"Pod", false}, {"Rollout", false},
	}
	for _, v := range verdicts {
		for _, k := range kinds {
			t.Run(fmt.Sprintf("%s-%s-%s", v.class, v.cause, k.kind), func(t *testing.T) {
				p := NewPlanner(nil)
				p.Add(&audit.PodResult{Namespace: "apps", Name: "web-1", Workload: audit.Workload{Kind: k.kind, Name: "web"},
					Verdict: audit.Verdict{Class: v.class, Cause: v.cause}}, nil, "", "")
				plan := p.Plan()
				if !v.listed {
					if len(plan.Items) != 0 {
						t.Fatalf("a %s Pod put its owner on the plan: %+v", v.class, plan.Items)
					}
					return
				}
				if len(plan.Items) != 1 {
					t.Fatalf("plan has %d items, want 1", len(plan.Items))
				}
				it := plan.Items[0]
				want := Report
				if v.fixed && k.restartable {
					want = Restart
				}
				if it.Action != want {
					t.Errorf("action %s, want %s", it.Action, want)
				}
				if want == Report && (it.Why == "" || it.State != Reported) {
					t.Errorf("reported with why %q, state %s", it.Why, it.State)
				}
				if want == Restart && it.State != Planned {
					t.Errorf("state %s, want planned", it.State)
				}
				if len(it.Pods) != 1 || it.Pods[0].Name != "web-1" || it.Pods[0].Class != v.class || it.Pods[0].Cause != v.cause {
					t.Errorf("pods %+v", it.Pods)
				}
			})
		}
	}
}

// --classes narrows the plan; an owner with Pods a restart fixes and Pods
// it does not is restarted; in-place Pods of an owner that is restarted
// anyway are folded into the restart; owners sort by namespace, kind and
// name.
func TestPlanGrouping(t *testing.T) {
	dep := func(name string) audit.Workload { return audit.Workload{Kind: "Deployment", Name: name} }
	stale := audit.Verdict{Class: audit.Stale, Cause: audit.CauseRevision}
	missing := audit.Verdict{Class: audit.Missing, Cause: audit.CauseWithoutGraft}
	denied := audit.Verdict{Class: audit.Stale, Cause: audit.CauseWouldBeDenied}
	up := &Upgrade{From: "r1", To: "r2"}
	add := func(p *Planner, ns, pod string, w audit.Workload, v audit.Verdict, u *Upgrade, r Refusal) {
		p.Add(&audit.PodResult{Namespace: ns, Name: pod, Workload: w, Verdict: v}, u, r, string(r))
	}

	onlyStale := NewPlanner([]audit.Class{audit.Stale})
	add(onlyStale, "a", "m-1", dep("m"), missing, nil, "")
	add(onlyStale, "a", "s-1", dep("s"), stale, nil, "")
	if got := onlyStale.Plan(); len(got.Items) != 1 || got.Items[0].Name != "s" {
		t.Errorf("--classes stale planned %+v", got.Items)
	}

	p := NewPlanner(nil)
	add(p, "b", "web-2", dep("web"), denied, nil, "")
	add(p, "b", "web-1", dep("web"), stale, nil, "")
	add(p, "b", "api-1", dep("api"), stale, up, "")
	add(p, "b", "api-2", dep("api"), stale, nil, RefuseContainerChanged)
	add(p, "b", "db-0", audit.Workload{Kind: "StatefulSet", Name: "db"}, stale, up, "")
	add(p, "a", "solo", audit.Workload{Kind: "Pod", Name: "solo"}, stale, up, "")
	add(p, "a", "job-x", audit.Workload{Kind: "Job", Name: "job"}, missing, nil, "")
	plan := p.Plan()
	var got []string
	for _, it := range plan.Items {
		var pods []string
		for _, pod := range it.Pods {
			s := pod.Name
			if pod.Upgrade != nil {
				s += "*"
			}
			pods = append(pods, s)
		}
		got = append(got, fmt.Sprintf("%s %s %s [%s]", it.Owner, it.Action, it.State, strings.Join(pods, " ")))
	}
	want := []string{
		"a/job/job report reported [job-x]",
		"a/pod/solo in-place planned [solo*]",
		"b/deployment/api restart planned [api-1 api-2]",
		"b/deployment/web restart planned [web-1 web-2]",
		"b/statefulset/db in-place planned [db-0*]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("plan:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if again := p.Plan(); !reflect.DeepEqual(again, plan) {
		t.Errorf("a second Plan differs:\n%+v\nfirst:\n%+v", again.Items, plan.Items)
	}
	if plan.Count(Restart) != 2 || plan.Count(InPlace) != 2 || plan.Count(Report) != 1 {
		t.Errorf("counts: %d restart, %d in place, %d report", plan.Count(Restart), plan.Count(InPlace), plan.Count(Report))
	}

	var out bytes.Buffer
	if err := Write(&out, "json", plan, true, time.Unix(0, 0), 0); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		APIVersion, Kind string
		Items            []struct {
			Namespace, Kind, Name, Action, State string
			Pods                                 []struct {
				Name           string
				InPlaceRefusal string
			}
		}
		Summary struct {
			Owners, Pods int
			Actions      map[string]int
		}
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out.Bytes())
	}
	if doc.APIVersion != PlanVersion || doc.Kind != "RolloutPlan" || doc.Summary.Owners != 5 || doc.Summary.Pods != 7 ||
		doc.Summary.Actions["restart"] != 2 || doc.Items[2].Pods[1].InPlaceRefusal != string(RefuseContainerChanged) {
		t.Errorf("-o json:\n%s", out.Bytes())
	}
	out.Reset()
	if err := Write(&out, "table", plan, true, time.Unix(0, 0), 0); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"NAMESPACE   OWNER", "deployment/api", "in place refused: container-changed=1", "stale/revision-changed=2",
		"plan: 5 owners (2 restart, 2 in place, 1 reported), 7 Pods", "run with --apply"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("table lacks %q:\n%s", w, out.String())
		}
	}
}

// A budget blocks a restart when it selects the owner's Pods and allows
// no disruption now, or its status is not current; never otherwise.
func TestBlocking(t *testing.T) {
	web := map[string]string{"app": "web", "tier": "front"}
	sel := func(s string) labels.Selector {
		l, err := labels.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	tests := []struct {
		name   string
		budget Budget
		blocks bool
	}{
		{"allows one", Budget{Name: "b", Selector: sel("app=web"), DisruptionsAllowed: 1, Current: true}, false},
		{"allows none", Budget{Name: "b", Selector: sel("app=web"), DisruptionsAllowed: 0, Current: true}, true},
		{"status not observed", Budget{Name: "b", Selector: sel("app=web"), DisruptionsAllowed: 1}, true},
		{"other Pods", Budget{Name: "b", Selector: sel("app=db"), DisruptionsAllowed: 0, Current: true}, false},
		{"every Pod of the namespace", Budget{Name: "b", Selector: labels.Everything(), DisruptionsAllowed: 0, Current: true}, true},
		{"null selector", Budget{Name: "b", DisruptionsAllowed: 0, Current: true}, false},
		{"set-based", Budget{Name: "b", Selector: sel("tier in (front,back)"), DisruptionsAllowed: 0, Current: true}, true},
	}
	for _, tt := range tests {
		got := Blocking([]Budget{{Name: "other", Selector: sel("app=db"), Current: true}, tt.budget}, web)
		if (len(got) > 0) != tt.blocks {
			t.Errorf("%s: blocking %v, want %v", tt.name, got, tt.blocks)
		}
		if len(got) > 0 && !strings.Contains(BlockedMessage(got), "PodDisruptionBudget b") {
			t.Errorf("%s: message %q", tt.name, BlockedMessage(got))
		}
	}
}

// The progress display: plain lines off a terminal; on one, a status line
// redrawn in place and finished owners' lines above it.
func TestProgress(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	it := &Item{Owner: Owner{Namespace: "a", Kind: "Deployment", Name: "web"}, State: Done, Message: "rolled out: 3/3 Pods ready"}
	for _, terminal := range []bool{false, true} {
		var out bytes.Buffer
		p := NewProgress(&out, terminal, 0, now)
		p.Begin(2)
		p.Started(it, "restarting")
		p.Ready(it, 1, 3)
		p.Finished(it)
		p.End()
		s := out.String()
		if !strings.Contains(s, "[1/2] a/deployment/web: done in 1s: rolled out: 3/3 Pods ready\n") {
			t.Errorf("terminal=%v: no finished line:\n%q", terminal, s)
		}
		if got := strings.Contains(s, "(1/3 Pods ready)"); got != terminal {
			t.Errorf("terminal=%v: status line shown %v:\n%q", terminal, got, s)
		}
		if got := strings.Contains(s, "\r\x1b[K"); got != terminal {
			t.Errorf("terminal=%v: line erased %v:\n%q", terminal, got, s)
		}
	}
}

// On a narrow terminal the status line is cut to fit, so erasing it
// erases all of it; finished lines are never cut.
func TestProgressFitsTheTerminal(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { clock = clock.Add(time.Second); return clock }
	var out bytes.Buffer
	const width = 40
	p := NewProgress(&out, true, width, now)
	p.Begin(3)
	items := []*Item{
		{Owner: Owner{Namespace: "payments", Kind: "Deployment", Name: "checkout-frontend"}, State: Done, Message: "rolled out: 3/3 Pods ready"},
		{Owner: Owner{Namespace: "payments", Kind: "StatefulSet", Name: "ledger"}},
	}
	for _, it := range items {
		p.Started(it, "restarting")
	}
	p.Ready(items[1], 1, 5)
	p.Finished(items[0])
	p.End()
	var finished bool
	for _, seg := range strings.FieldsFunc(out.String(), func(r rune) bool { return r == '\r' || r == '\n' }) {
		seg = strings.TrimPrefix(seg, "\x1b[K")
		if strings.HasPrefix(seg, "[1/3] ") {
			finished = true
			if !strings.HasSuffix(seg, "rolled out: 3/3 Pods ready") {
				t.Errorf("the finished line was cut: %q", seg)
			}
			continue
		}
		if n := len([]rune(seg)); n > width-1 {
			t.Errorf("status line of %d columns on a terminal of %d: %q", n, width, seg)
		}
	}
	if !finished {
		t.Errorf("no finished line:\n%q", out.String())
	}
}
