package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestAuditServeFlags: --serve refuses what only a single run can do.
func TestAuditServeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", "json"}, "--serve serves -o prometheus"},
		{[]string{"--fail-on", "stale"}, "--fail-on are for one run"},
		{[]string{"--workloads"}, "--fail-on are for one run"},
		{[]string{"--interval", "0s"}, "--interval 0s"},
		{[]string{"-n", "shop", "-A"}, "either -n NAMESPACE or -A"},
		{[]string{"--config", "/nonexistent/config.yaml"}, "config.yaml"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"audit", "--serve", "127.0.0.1:0"}, c.args...), nil, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q: want 1 and %q", code, stderr.String(), c.want)
			}
		})
	}
}
