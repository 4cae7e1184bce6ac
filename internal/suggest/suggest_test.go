package suggest

import "testing"

func TestClosest(t *testing.T) {
	known := []string{"enabled", "mesh-proxy", "mesh-proxy-secrets-agent", "otel-agent", "agent"}
	for _, tt := range []struct {
		name string
		want string
		ok   bool
	}{
		{"mesh-prxy", "mesh-proxy", true},
		{"Enabled", "enabled", true},
		{"otel", "agent", false}, // four edits from the nearest: not a typo of it
		{"agnet", "agent", true},
		{"", "agent", true}, // five edits, but the nearest of equals: sorted first
	} {
		got, ok := Closest(tt.name, known)
		if tt.name == "" {
			if ok {
				t.Errorf("Closest(%q) = %q, near; want not near", tt.name, got)
			}
			continue
		}
		if got != tt.want || ok != tt.ok {
			t.Errorf("Closest(%q) = %q, %v; want %q, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	if got, ok := Closest("x", nil); got != "" || ok {
		t.Errorf("Closest with nothing known = %q, %v", got, ok)
	}
}

func TestHint(t *testing.T) {
	known := []string{"cpuRequest", "cpuLimit", "image"}
	if got, want := Hint("cpuRequst", known, "parameters"), ` (did you mean "cpuRequest"?)`; got != want {
		t.Errorf("Hint = %q, want %q", got, want)
	}
	if got, want := Hint("zzzzzzzzzz", known, "parameters"), "; parameters: cpuLimit, cpuRequest, image"; got != want {
		t.Errorf("Hint = %q, want %q", got, want)
	}
	if got := Hint("x", nil, "parameters"); got != "" {
		t.Errorf("Hint with nothing known = %q, want nothing", got)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"same", "same", 0},
	} {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := editDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d (symmetric)", tt.b, tt.a, got, tt.want)
		}
	}
}
