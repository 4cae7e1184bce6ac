package templates

import (
	"os"
	"testing"
)

// BenchmarkLoad is what loading templates costs graft serve at start and
// on each reload: the embedded set (rendered with its defaults) and a
// directory (linted: every template at every bound).
func BenchmarkLoad(b *testing.B) {
	b.Run("builtin", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Builtin(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dir", func(b *testing.B) {
		fsys := os.DirFS("builtin")
		b.ReportAllocs()
		for b.Loop() {
			if _, err := LoadFS(fsys); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRender is one render with its checks: what a plan-cache miss
// pays per template.
func BenchmarkRender(b *testing.B) {
	set, err := Builtin()
	if err != nil {
		b.Fatal(err)
	}
	for _, name := range []string{"agent", "mesh-proxy"} {
		t, _ := set.Get(name)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := t.Render(map[string]string{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
