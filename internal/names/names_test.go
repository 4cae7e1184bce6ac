package names

import "testing"

func TestReserved(t *testing.T) {
	for key, want := range map[string]bool{
		Status:                        true,
		Inject:                        true,
		"redirect.graft.dev/mode":     true,
		"a.b.graft.dev/x":             true,
		"Policy.GRAFT.dev/exempt":     true,
		"graft.dev":                   false, // no prefix
		"notgraft.dev/x":              false, // another domain
		"graft.dev.example.com/x":     false,
		"example.com/graft.dev":       false,
		"app":                         false,
		".graft.dev/x":                true,
		"kubernetes.io/config.mirror": false,
	} {
		if got := Reserved(key); got != want {
			t.Errorf("Reserved(%q) = %v, want %v", key, got, want)
		}
	}
	for key, want := range map[string]bool{
		"graft.dev/mesh-proxy.image": true,
		"graft.dev/templates":        false,
		"graft.dev/.image":           false,
		"graft.dev/mesh-proxy.":      false,
		"redirect.graft.dev/a.b":     false,
	} {
		if got := ParamAnnotationKey(key); got != want {
			t.Errorf("ParamAnnotationKey(%q) = %v, want %v", key, got, want)
		}
	}
}
