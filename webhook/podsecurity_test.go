package webhook

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/graftdev/graft/bench/corpus"
)

// TestRouteTellsPodSecurityLevel: the route of a profile's webhook for
// namespaces at one Pod Security level (/inject/<profile>.<level>) makes
// graft refuse, with its own message, a Pod whose sidecars that level
// refuses; the profile's plain route does not know the level and injects.
func TestRouteTellsPodSecurityLevel(t *testing.T) {
	ts := startServer(t, serverSetup{configYAML: `
defaultProfile: mesh
profiles:
  mesh:
    templates: [mesh-proxy]
    podSecurity: {maxLevel: privileged}
`})
	pod := map[string]any{
		"metadata": map[string]any{"name": "web", "annotations": map[string]any{"graft.dev/mesh-proxy.trafficRedirect": "init-container"}},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "app:1"}}},
	}
	review := corpus.Marshal("", "u-psa", "CREATE", "shop", pod)
	for _, tt := range []struct {
		path    string
		allowed bool
		message string
	}{
		{"/inject/mesh", true, ""},
		{"/inject/mesh.privileged", true, ""},
		{"/inject/mesh.baseline", false, `needs Pod Security level privileged, and its namespace enforces baseline`},
		{"/inject/mesh.restricted/default", false, `and its namespace enforces restricted`},
	} {
		code, body := ts.post(t, tt.path, review)
		if code != http.StatusOK {
			t.Fatalf("%s: status %d: %s", tt.path, code, body)
		}
		var r struct {
			Response struct {
				Allowed bool `json:"allowed"`
				Status  struct {
					Message string `json:"message"`
				} `json:"status"`
			} `json:"response"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		if r.Response.Allowed != tt.allowed || !strings.Contains(r.Response.Status.Message, tt.message) {
			t.Errorf("%s: allowed %v (%q), want %v (%q)", tt.path, r.Response.Allowed, r.Response.Status.Message, tt.allowed, tt.message)
		}
	}
	if got := metric(t, ts.reg, "graft_admission_failures_total", "reason", "pod-security"); got != 2 {
		t.Errorf("graft_admission_failures_total{reason=pod-security} = %v, want 2", got)
	}
}
