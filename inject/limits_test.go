package inject

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/internal/names"
)

// countingClock reads as start until the deadline's reading: from the
// passAt-th reading on it reads one second later. It counts readings.
type countingClock struct {
	start  time.Time
	passAt int
	reads  int
}

func (c *countingClock) now() time.Time {
	c.reads++
	if c.passAt > 0 && c.reads >= c.passAt {
		return c.start.Add(time.Second)
	}
	return c.start
}

// TestBudgetCheckedInsideLoops: the budget is read inside the loops over
// a Pod's containers, not only between steps, and once it has passed the
// engine stops at the next check and answers per the failure mode.
func TestBudgetCheckedInsideLoops(t *testing.T) {
	const n = 10000
	body := manyContainersReview(n)
	start := time.Unix(1e9, 0)
	deadline := start.Add(time.Millisecond)

	// Never late: how often does a whole admission read the clock?
	free := &countingClock{start: start}
	cfg := DefaultConfig()
	cfg.MaxPatchBytes = 1 << 30
	e := newTestEngine(t, cfg, WithClock(free.now))
	e.impl.maxAnnotations = 1 << 30
	if _, res, err := e.Admit(nil, body, Options{Deadline: deadline}); err != nil || res.Decision != DecisionInject {
		t.Fatalf("no deadline passed: %v/%v %v", res.Decision, res.Reason, err)
	}
	// Parse, merge, the status and the patch each walk n containers.
	if want := 3 * n / budgetStride; free.reads < want {
		t.Fatalf("%d clock readings for %d containers, want at least %d: the loops do not check the budget", free.reads, n, want)
	}
	total := free.reads

	// Late at each of a spread of readings, in every loop: answered
	// budget-exceeded, with no reading after the one that was late.
	for _, at := range []int{1, 2, total / 4, total / 2, 3 * total / 4, total - 1} {
		c := &countingClock{start: start, passAt: at}
		e := newTestEngine(t, cfg, WithClock(c.now))
		e.impl.maxAnnotations = 1 << 30
		_, res, err := e.Admit(nil, body, Options{Deadline: deadline})
		if err != nil {
			t.Fatal(err)
		}
		if res.Decision != DecisionFailOpen || res.Reason != ReasonBudgetExceeded {
			t.Errorf("late at reading %d of %d: %v/%v, want fail-open/budget-exceeded", at, total, res.Decision, res.Reason)
		}
		if c.reads != at {
			t.Errorf("late at reading %d: the engine read the clock %d times: it went on after the deadline", at, c.reads)
		}
	}
}

// TestTooLarge: a Pod whose injection passes a limit is answered per the
// failure mode, with a warning or message naming the limit, never with a
// patch: the patch over maxPatchBytes, or the status taking the
// annotations past the API server's 256 KiB.
func TestTooLarge(t *testing.T) {
	cfg := DefaultConfig()
	deny := cfg.Profiles["enabled"]
	deny.FailureMode = FailDeny
	cfg.Profiles["enabled-deny"] = deny
	e := newTestEngine(t, cfg)
	small := DefaultConfig()
	small.MaxPatchBytes = 4096
	eSmall := newTestEngine(t, small)
	for _, tt := range []struct {
		name    string
		e       *Engine
		profile string
		n       int
		cause   string
	}{
		{"patch", e, "", 680, "too-large: patch over 1024 KiB"},
		{"annotations", e, "", 1000, "too-large: annotations 339 KiB > 256 KiB"},
		{"annotations deny", e, "enabled-deny", 1000, "too-large: annotations 339 KiB > 256 KiB"},
		{"configured patch limit", eSmall, "", 2, "too-large: patch over 4 KiB"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, res, err := tt.e.Admit(nil, manyContainersReview(tt.n), Options{Profile: tt.profile})
			if err != nil {
				t.Fatal(err)
			}
			if res.Reason != ReasonTooLarge || res.PatchBytes != 0 {
				t.Fatalf("%v/%v with a %d-byte patch, want too-large and no patch", res.Decision, res.Reason, res.PatchBytes)
			}
			if responsePatch(t, out) != nil {
				t.Fatalf("a patch in %s", out)
			}
			var r struct {
				Response struct {
					Allowed  bool     `json:"allowed"`
					Warnings []string `json:"warnings"`
					Status   struct {
						Code    int    `json:"code"`
						Message string `json:"message"`
					} `json:"status"`
				} `json:"response"`
			}
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatal(err)
			}
			if tt.profile == "enabled-deny" {
				msg := r.Response.Status.Message
				if r.Response.Allowed || res.Decision != DecisionDeny || r.Response.Status.Code != 400 || !strings.Contains(msg, tt.cause) || strings.Contains(msg, "retry") {
					t.Errorf("denial %s", out)
				}
				return
			}
			if !r.Response.Allowed || res.Decision != DecisionFailOpen || len(r.Response.Warnings) != 1 {
				t.Fatalf("response %s", out)
			}
			w := r.Response.Warnings[0]
			if !strings.Contains(w, tt.cause) || utf8.RuneCountInString(w) >= 120 {
				t.Errorf("warning %q (%d characters), want it to name %q in under 120", w, utf8.RuneCountInString(w), tt.cause)
			}
		})
	}
}

// TestAnnotationLimitIsGraftsOnly: graft answers too-large only when its
// own additions take the annotations past the limit. Just under the
// limit, the injected Pod's annotations are within it; a Pod already
// over it by itself is injected (the API server tells its author).
func TestAnnotationLimitIsGraftsOnly(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxPatchBytes = 8 << 20
	e := newTestEngine(t, cfg)
	total := func(obj []byte) int {
		var pod struct {
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(obj, &pod); err != nil {
			t.Fatal(err)
		}
		n := 0
		for k, v := range pod.Metadata.Annotations {
			n += len(k) + len(v)
		}
		return n
	}
	// Find the largest container count injected: the Pod then carries
	// at most the limit.
	lo, hi := 1, 2000
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, res, _ := e.Admit(nil, manyContainersReview(mid), Options{}); res.Decision == DecisionInject {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	review := manyContainersReview(lo)
	if got := total(applyResponse(t, review, mustAdmit(t, e, review, Options{}))); got > maxAnnotationBytes {
		t.Errorf("%d containers injected with %d bytes of annotations, over %d", lo, got, maxAnnotationBytes)
	}
	if _, res, _ := e.Admit(nil, manyContainersReview(lo+1), Options{}); res.Reason != ReasonTooLarge {
		t.Errorf("%d containers: %v/%v, want too-large", lo+1, res.Decision, res.Reason)
	}

	// Escaped annotation values count as decoded: one escape is one byte.
	escaped := strings.Repeat(`\u0041`, 40000) // 240,000 raw bytes, 40,000 decoded
	body := strings.Replace(string(manyContainersReview(10)), `"annotations":{`, `"annotations":{"big":"`+escaped+`",`, 1)
	if _, res, err := e.Admit(nil, []byte(body), Options{}); err != nil || res.Decision != DecisionInject {
		t.Errorf("escaped annotation: %v/%v %v, want inject", res.Decision, res.Reason, err)
	}

	big := manyContainersPod(10, map[string]any{"example.com/big": strings.Repeat("x", maxAnnotationBytes)})
	if _, res, _ := e.Admit(nil, podReview(big, "big"), Options{}); res.Decision != DecisionInject {
		t.Errorf("a Pod over the limit by itself: %v/%v, want inject", res.Decision, res.Reason)
	}
}

// TestUpgradeOfLargePod: upgrading a Pod too large for an LCS diff uses
// the positional diff: the patch still applies and gives what the
// minimal one would.
func TestUpgradeOfLargePod(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxPatchBytes = 8 << 20
	for _, n := range []int{20, 600} {
		e := newTestEngine(t, cfg)
		stale := staleReview(t, e, manyContainersReview(n))
		var p pod
		if err := parsePodMeta(b2s(reviewObject(t, stale)), &p); err != nil {
			t.Fatal(err)
		}
		if err := parsePodSpec(&p, nil); err != nil {
			t.Fatal(err)
		}
		if got, want := lcsAffordable(&p), n < 500; got != want {
			t.Fatalf("%d containers: LCS affordable %v, want %v", n, got, want)
		}
		out, res, err := e.Admit(nil, stale, Options{})
		if err != nil || res.Decision != DecisionInject {
			t.Fatalf("%d containers: %v/%v %v", n, res.Decision, res.Reason, err)
		}
		upgraded := applyResponse(t, stale, out)
		again := reReview(t, stale, upgraded)
		if p := responsePatch(t, mustAdmit(t, e, again, Options{})); p != nil {
			t.Errorf("%d containers: the upgraded Pod is patched again: %.300s", n, p)
		}
	}
}

// staleReview is review injected by e, with its status's first digest
// changed: graft must upgrade it.
func staleReview(t *testing.T, e *Engine, review []byte) []byte {
	t.Helper()
	obj := applyResponse(t, review, mustAdmit(t, e, review, Options{}))
	var pod map[string]any
	if err := json.Unmarshal(obj, &pod); err != nil {
		t.Fatal(err)
	}
	ann := pod["metadata"].(map[string]any)["annotations"].(map[string]any)
	st := ann[names.Status].(string)
	i := strings.Index(st, `"digest":"`) + len(`"digest":"`)
	ann[names.Status] = st[:i] + "0000" + st[i+4:]
	return corpus.Marshal("", "7c5e2b1a-0000-4000-8000-0000000000aa", "CREATE", "shop", pod)
}

// TestLimitPathsAllocateNothing: answering a Pod with many containers,
// one too large, and one past the budget in a loop allocates nothing
// once warm.
func TestLimitPathsAllocateNothing(t *testing.T) {
	cfg := DefaultConfig()
	lenient := cfg.Profiles["enabled"]
	lenient.OnInvalidParams = InvalidUseDefault
	cfg.Profiles["enabled"] = lenient
	eLenient := newTestEngine(t, cfg)
	e := newTestEngine(t, DefaultConfig())
	// Always past the deadline: the first reading, inside the loop over
	// the containers, stops the request.
	start := time.Unix(1e9, 0)
	eLate := newTestEngine(t, DefaultConfig(), WithClock(func() time.Time { return start.Add(time.Second) }))
	for _, tt := range []struct {
		name string
		e    *Engine
		n    int
		want Reason
	}{
		{"inject", e, 300, ReasonNone},
		{"too-large patch", e, 680, ReasonTooLarge},
		{"too-large annotations", e, 1000, ReasonTooLarge},
		{"budget-exceeded", eLate, 1000, ReasonBudgetExceeded},
		{"denied, message cut", e, -1, ReasonInvalidParams},
		{"warnings cut and counted", eLenient, -2, ReasonNone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			switch tt.n {
			case -1: // a 2,000-character value quoted in the denial
				body = podReview(manyContainersPod(2, map[string]any{"graft.dev/mesh-proxy.logLevel": strings.Repeat("x", 2000)}), "deny")
			case -2: // 20 unknown parameters under onInvalidParams: default
				ann := map[string]any{}
				for i := range 20 {
					ann["graft.dev/otel-agent.nope"+strconv.Itoa(i)+strings.Repeat("x", 150)] = "1"
				}
				body = podReview(manyContainersPod(2, ann), "warn")
			default:
				body = manyContainersReview(tt.n)
			}
			var dst []byte
			var o Options
			if tt.e == eLate {
				o.Deadline = start.Add(time.Millisecond)
			}
			admit := func() {
				var res Result
				var err error
				if dst, res, err = tt.e.Admit(dst[:0], body, o); err != nil || res.Reason != tt.want {
					t.Fatalf("%v/%v %v", res.Decision, res.Reason, err)
				}
				if tt.n == -2 && res.Warnings != maxWarnings {
					t.Fatalf("%d warnings, want %d", res.Warnings, maxWarnings)
				}
			}
			admit()
			if got := testing.AllocsPerRun(20, admit); got != 0 {
				t.Errorf("%v allocations per admission, want 0", got)
			}
		})
	}
}

// TestCachesHoldNoLargeValues: the caches keyed by what a Pod carries
// (its status, its graft annotations) do not keep large values, so their
// memory is bounded by their entry count, not by what Pods' authors
// write.
func TestCachesHoldNoLargeValues(t *testing.T) {
	e := newTestEngine(t, DefaultConfig())
	for i, ann := range []map[string]any{
		{names.Status: `{"version":2,"templates":[],"x":"` + strings.Repeat("s", maxCachedStatus) + `"}`},
		{"graft.dev/mesh-proxy.logLevel": strings.Repeat("v", maxPlanKey)},
	} {
		review := podReview(manyContainersPod(2, ann), "big")
		if _, _, err := e.Admit(nil, review, Options{}); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
	}
	if n := len(e.impl.records.m); n != 0 {
		t.Errorf("%d large statuses cached, want none", n)
	}
	// Every case selects the templates; the first has no other graft
	// annotation: its plan is the one cached.
	if n := len(e.impl.plans.m); n != 1 {
		t.Errorf("%d plans cached, want 1: the one with a large key is not", n)
	}
	// Small ones are cached as before.
	review := injectedReview(t, e, manyContainersReview(2))
	if _, _, err := e.Admit(nil, review, Options{}); err != nil {
		t.Fatal(err)
	}
	if len(e.impl.records.m) != 1 || len(e.impl.plans.m) != 1 {
		t.Errorf("%d statuses and %d plans cached, want 1 and 1", len(e.impl.records.m), len(e.impl.plans.m))
	}
}

// TestBudgetInRework: the upgrade path (a stale status) reads the budget
// in its own passes and stops as the normal path does.
func TestBudgetInRework(t *testing.T) {
	start := time.Unix(1e9, 0)
	deadline := start.Add(time.Millisecond)
	c := &countingClock{start: start}
	e := newTestEngine(t, DefaultConfig(), WithClock(func() time.Time { return c.now() }))
	stale := staleReview(t, e, manyContainersReview(300))
	*c = countingClock{start: start}
	if _, res, err := e.Admit(nil, stale, Options{Deadline: deadline}); err != nil || res.Decision != DecisionInject {
		t.Fatalf("in time: %v/%v %v", res.Decision, res.Reason, err)
	}
	total := c.reads
	if total < 4 {
		t.Fatalf("the upgrade read the clock %d times", total)
	}
	for at := 1; at <= total; at++ {
		*c = countingClock{start: start, passAt: at}
		_, res, err := e.Admit(nil, stale, Options{Deadline: deadline})
		if err != nil || res.Reason != ReasonBudgetExceeded || c.reads != at {
			t.Errorf("late at reading %d of %d: %v/%v %v, %d readings", at, total, res.Decision, res.Reason, err, c.reads)
		}
	}
}
