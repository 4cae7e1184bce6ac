package live

import (
	"os"
	"path/filepath"
	"testing"
)

// ParseRef takes KIND/NAME as kubectl spells the kinds explain reads, and
// leaves everything else, and any path that exists, to be read as a file.
func TestParseRef(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "pod"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pod", "web"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	tests := []struct {
		arg, kind, name string
		ok              bool
	}{
		{"po/web", "Pod", "web", true},
		{"pods/web", "Pod", "web", true},
		{"deploy/web", "Deployment", "web", true},
		{"Deployments/web", "Deployment", "web", true},
		{"sts/db", "StatefulSet", "db", true},
		{"ds/agent", "DaemonSet", "agent", true},
		{"rs/web-1", "ReplicaSet", "web-1", true},
		{"job/once", "Job", "once", true},
		{"cj/nightly", "CronJob", "nightly", true},
		{"cronjobs/nightly", "CronJob", "nightly", true},
		{"pod/web", "", "", false},    // a file of that name exists
		{"svc/web", "", "", false},    // not a kind explain reads
		{"deploy/", "", "", false},    // no name
		{"deploy/a/b", "", "", false}, // a path
		{"web.yaml", "", "", false},
	}
	for _, tt := range tests {
		kind, name, ok := ParseRef(tt.arg)
		if kind != tt.kind || name != tt.name || ok != tt.ok {
			t.Errorf("ParseRef(%q) = %q, %q, %v; want %q, %q, %v", tt.arg, kind, name, ok, tt.kind, tt.name, tt.ok)
		}
	}
}
