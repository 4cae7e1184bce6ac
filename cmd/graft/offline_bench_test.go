package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/graftdev/graft/inject"
)

// BenchmarkInject measures graft inject on a manifest stream of n
// Deployments (with a ConfigMap each, passed through), from bytes in to
// bytes out, with one engine as a CLI run has.
func BenchmarkInject(b *testing.B) {
	cfg, set, err := loadEngineConfig("", "")
	if err != nil {
		b.Fatal(err)
	}
	e, err := inject.New(cfg, set)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 100} {
		var sb strings.Builder
		for i := range n {
			fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg-%d}\ndata: {mode: fast}\n", i)
			fmt.Fprintf(&sb, "---\n%s", strings.Replace(workloads[1].yaml, "name: web", fmt.Sprintf("name: web-%d", i), 1))
		}
		data := []byte(sb.String())
		for _, format := range []string{"yaml", "json"} {
			b.Run(fmt.Sprintf("deployments=%d/%s", n, format), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				a := &admitter{engine: e}
				for b.Loop() {
					docs, err := parseDocuments("in", data)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := injectDocuments(a, docs, format, func(*document, string, string) {}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
