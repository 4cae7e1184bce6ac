package inject

import (
	"fmt"
	"math"
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
	return corpus.Marshal("", "7c5e2b1a-0000-4000-8000-00000000beef", "CREATE", "shop", manyContainersPod(n, nil))
}

// manyContainersPod is manyContainersReview's Pod, with annotations
// added to graft.dev/templates.
func manyContainersPod(n int, annotations map[string]any) map[string]any {
	containers := make([]any, n)
	for i := range containers {
		containers[i] = map[string]any{"name": "c" + strconv.Itoa(i), "image": "nginx"}
	}
	ann := map[string]any{names.Templates: allTemplates}
	for k, v := range annotations {
		ann[k] = v
	}
	return map[string]any{
		"apiVersion": "v1",
		"kind":       "Pod",
		"metadata":   map[string]any{"name": "many", "namespace": "shop", "annotations": ann},
		"spec":       map[string]any{"containers": containers},
	}
}

// BenchmarkAdmitContainers measures the engine on one Pod with all four
// templates and 10 to 10,000 app containers. ns/container is the figure
// that must stay flat: containers × edits must not multiply.
//
// lifted: with the size limits lifted, every Pod is injected: the whole
// path, patch and status included. shipped: with the shipped limits,
// Pods past about 650 containers are answered too-large (patch over 1 MiB,
// then the status past the annotations' 256 KiB).
func BenchmarkAdmitContainers(b *testing.B) {
	for _, limits := range []string{"lifted", "shipped"} {
		cfg := DefaultConfig()
		if limits == "lifted" {
			cfg.MaxPatchBytes = math.MaxInt
		}
		e := newTestEngine(b, cfg)
		if limits == "lifted" {
			e.impl.maxAnnotations = math.MaxInt
		}
		for _, n := range []int{10, 100, 1000, 10000} {
			body := manyContainersReview(n)
			b.Run(fmt.Sprintf("%s/n=%d", limits, n), func(b *testing.B) {
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
}
