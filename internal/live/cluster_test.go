package live

import (
	"os"
	"path/filepath"
	"testing"
)

// The namespace a live command works in is chosen as kubectl chooses it:
// -n, else the kubeconfig context's, else default. Connect sends no
// request, so a kubeconfig naming an unreachable server is enough.
func TestConnectNamespace(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1"}
users:
- name: u
  user: {token: t}
contexts:
- name: team-a
  context: {cluster: c, user: u, namespace: team-a}
- name: plain
  context: {cluster: c, user: u}
current-context: team-a
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, context, namespace, want string
	}{
		{"the current context's namespace", "", "", "team-a"},
		{"-n wins", "", "other", "other"},
		{"--context without a namespace: default", "plain", "", "default"},
		{"--context and -n", "plain", "x", "x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cl, err := Connect(Config{Kubeconfig: kubeconfig, Context: tt.context, Namespace: tt.namespace})
			if err != nil {
				t.Fatal(err)
			}
			if got := cl.Namespace(); got != tt.want {
				t.Errorf("namespace %q, want %q", got, tt.want)
			}
		})
	}
}
