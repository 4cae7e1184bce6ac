package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestChartApplies: the Helm chart, rendered with each values file of its
// ci/ directory, passes a server-side dry-run apply, as the kustomize
// builds do in TestDeployManifestsApply. For graft-certs the chart gets the
// files `graft certs` writes. Kinds that need a CRD (cert-manager's, the
// Prometheus Operator's) are listed and skipped.
func TestChartApplies(t *testing.T) {
	helm := os.Getenv("GRAFT_E2E_HELM")
	if helm == "" {
		t.Fatal("GRAFT_E2E_HELM is not set; `make e2e` builds helm and sets it")
	}
	chart := filepath.Join(repoRoot, "deploy", "helm", "graft")
	files, err := filepath.Glob(filepath.Join(chart, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no values files in %s/ci: %v", chart, err)
	}
	certs := filepath.Join(t.TempDir(), "certs")
	if out, err := exec.Command(graftBin(t), "certs", "--out", certs).CombinedOutput(); err != nil {
		t.Fatalf("graft certs: %v\n%s", err, out)
	}
	home := t.TempDir()
	a := newApplier(t)
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), "-values.yaml")
		t.Run(name, func(t *testing.T) {
			// Each variant in a namespace of its own, so the dry runs of
			// namespaced objects never meet another variant's.
			args := []string{"template", "graft", chart, "--namespace", "e2e-chart-" + name,
				"--kube-version", strings.TrimPrefix(env.serverVersion, "v"), "--values", f}
			if name == "graft-certs" {
				args = append(args,
					"--set-file", "certificates.graftCerts.tlsCrt="+filepath.Join(certs, "tls.crt"),
					"--set-file", "certificates.graftCerts.tlsKey="+filepath.Join(certs, "tls.key"),
					"--set-file", "certificates.caBundle="+filepath.Join(certs, "ca.crt"))
			}
			cmd := exec.Command(helm, args...)
			cmd.Env = append(os.Environ(),
				"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
				"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
				"HELM_DATA_HOME="+filepath.Join(home, "data"))
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
			}
			a.applyAll(t, out)
		})
	}
}
