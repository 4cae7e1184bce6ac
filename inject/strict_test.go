package inject

import (
	"errors"
	"strings"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
)

// TestStrictJSON: what no API server sends is refused as malformed, with
// a reason: bytes after the review, and an object that repeats a key the
// engine reads (however the key is escaped). A JSON decoder would keep
// the last; the engine does not guess which a client meant. A repeated
// key the engine does not read changes nothing it decides, and passes.
func TestStrictJSON(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	base := string(corpus.Review(corpus.Small))
	spec := strings.Index(base, `"spec":`)
	// edit inserts ins before the first occurrence of at (after the
	// spec's start when inSpec).
	edit := func(at, ins string, inSpec bool) string {
		from := 0
		if inSpec {
			from = spec
		}
		i := strings.Index(base[from:], at)
		if i < 0 {
			t.Fatalf("corpus lacks %s", at)
		}
		return base[:from+i] + ins + base[from+i:]
	}
	for _, tt := range []struct {
		name, body, want string // want: "" for accepted
	}{
		{"trailing garbage", base + "x", "bytes after the AdmissionReview"},
		{"trailing object", base + "{}", "bytes after the AdmissionReview"},
		{"trailing whitespace", base + " \n", ""},
		{"review key", edit(`"request":`, `"kind":"AdmissionReview",`, false), `duplicate key "kind"`},
		{"request key", edit(`"operation":`, `"operation":"DELETE",`, false), `duplicate key "operation"`},
		{"escaped request key", edit(`"namespace":"shop","operation"`, `"\u006eamespace":"kube-system",`, false), `duplicate key "namespace"`},
		{"request kind key", edit(`"kind":"Pod"`, `"kind":"Pod",`, false), `duplicate key "kind"`},
		{"object key", edit(`"spec":`, `"metadata":{},`, false), `duplicate key "metadata"`},
		{"metadata key", edit(`"labels":`, `"labels":{"graft.dev/inject":"false"},`, false), `duplicate key "labels"`},
		{"label", edit(`"app":`, `"tier":"frontend",`, false), `duplicate key "tier"`},
		{"escaped label", edit(`"app":`, `"graft.dev\/inject":"false","graft.dev/inject":"true",`, false), `duplicate key "graft.dev/inject"`},
		{"annotation", edit(`"prometheus.io/port":`, `"prometheus.io/scrape":"false",`, false), `duplicate key "prometheus.io/scrape"`},
		{"owner references", edit(`"ownerReferences":`, `"ownerReferences":[],`, false), `duplicate key "ownerReferences"`},
		{"spec key", edit(`"containers":`, `"containers":[],`, true), `duplicate key "containers"`},
		{"container name", edit(`"name":"checkout-`, `"name":"graft-agent",`, true), `duplicate key "name"`},
		{"env name", edit(`"name":"SETTING_0"`, `"name":"X",`, true), `duplicate key "name"`},
		{"mount path", edit(`"mountPath":"/var/lib/app/vol-0"`, `"mountPath":"/x",`, true), `duplicate key "mountPath"`},
		{"unread key", edit(`"image":`, `"image":"other",`, true), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, res, err := e.Admit(nil, []byte(tt.body), Options{})
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if res.Decision != DecisionInject {
					t.Errorf("%v/%v, want inject", res.Decision, res.Reason)
				}
				return
			}
			if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want malformed: %s", err, tt.want)
			}
			if len(out) != 0 {
				t.Errorf("a response along with the error: %s", out)
			}
		})
	}
}

// TestStrictJSONInitContainers: init containers repeat no key either.
func TestStrictJSONInitContainers(t *testing.T) {
	e := newTestEngine(t, goldenConfig())
	base := string(corpus.Review(corpus.Prepend))
	inits := strings.Index(base, `"initContainers":`)
	for _, tt := range []struct{ at, ins, want string }{
		{`"name":"init-0"`, `"restartPolicy":"Never","restartPolicy":"Always",`, `duplicate key "restartPolicy"`},
		{`"volumeMounts":`, `"volumeMounts":[],`, `duplicate key "volumeMounts"`},
		{`"name":"init-0"`, `"name":"graft-agent",`, `duplicate key "name"`},
	} {
		i := strings.Index(base[inits:], tt.at)
		if inits < 0 || i < 0 {
			t.Fatalf("corpus lacks init containers with %s", tt.at)
		}
		body := base[:inits+i] + tt.ins + base[inits+i:]
		if _, _, err := e.Admit(nil, []byte(body), Options{}); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want malformed: %s", tt.ins, err, tt.want)
		}
	}
}
