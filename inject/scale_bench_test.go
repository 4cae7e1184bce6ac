package inject

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/internal/names"
)

// allTemplates selects every built-in template the enabled profile allows.
const allTemplates = "mesh-proxy,secrets-agent,otel-agent,log-shipper"

// manyContainersReview is a Pod CREATE with n small app containers that
// selects every template of the enabled profile: the Pod a hostile author
// in an opted-in namespace can send, where every container gets every
// template's env vars and mounts.
func manyContainersReview(n int) []byte {
	containers := make([]any, n)
	for i := range containers {
		containers[i] = map[string]any{"name": "c" + strconv.Itoa(i), "image": "nginx"}
	}
	pod := map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata": map[string]any{
			"name":        "many",
			"namespace":   "shop",
			"annotations": map[string]any{names.Templates: allTemplates},
		},
		"spec": map[string]any{"containers": containers},
	}
	return corpus.Marshal("", "7c5e2b1a-0000-4000-8000-00000000beef", "CREATE", "shop", pod)
}

// BenchmarkAdmitContainers measures the engine on one Pod with all four
// templates and 10 to 10,000 app containers. ns/container is the figure
// that must stay flat: containers × edits must not multiply.
func BenchmarkAdmitContainers(b *testing.B) {
	e := newTestEngine(b, DefaultConfig())
	for _, n := range []int{10, 100, 1000, 10000} {
		body := manyContainersReview(n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			dst, _, err := e.Admit(nil, body, Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if dst, _, err = e.Admit(dst[:0], body, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/container")
			b.ReportMetric(float64(len(dst)), "resp-bytes")
		})
	}
}
