package docscluster

import (
	"strings"
	"testing"
)

func TestTourRules(t *testing.T) {
	for _, tt := range []struct {
		name, marker, text string
		err                string // what plan's checks say of the block, "" for nothing
	}{
		{"cert-manager overlay", "not run: needs cert-manager running", "kubectl apply -k deploy/overlays/cert-manager\n", ""},
		{"chart with its default certificates", "not run: needs cert-manager", "helm install graft deploy/helm/graft\n", ""},
		{"chart with graft certs", "not run: needs cert-manager", "helm install graft deploy/helm/graft --set certificates.source=graftCerts\n", "has no cert-manager overlay"},
		{"no cert-manager in sight", "not run: needs cert-manager", "kubectl apply -k deploy/overlays/self-signed\n", "has no cert-manager overlay"},
		{"an old install", "not run: needs an install from before the selectors", "kubectl -n $NS delete deployment graft --cascade=orphan\n", ""},
		{"not an old install", "not run: needs an install from before the selectors", "kubectl -n graft-system rollout undo deployment/graft\n", "has no step of a migration"},
		{"make alone", "not run: a make target", "make images   # the image\nmake images IMAGE=x\n", ""},
		{"make and more", "not run: a make target", "make images\nkubectl apply -k .\n", "has no make command alone"},
		{"an exporter", "not run: serves until stopped", "graft audit --serve :8080\n", ""},
		{"the watchdog", "not run: needs Pods that reach the API server", "# components: [../../components/watchdog]\n", ""},
		{"an unknown reason", "not run: needs a cluster running graft", "kubectl get pods\n", "on the tour's pages a block runs on the cluster"},
		{"a cd", "checked by TestDocsOnCluster", "cd deploy/overlays/self-signed\nkubectl apply -k .\n", "changes the reader's directory"},
		{"a cd in a subshell", "checked by TestDocsOnCluster", "(cd deploy/overlays/self-signed && kustomize edit set image a=b)\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if reason, ok := strings.CutPrefix(tt.marker, "not run:"); ok {
				err = checkNotRun(strings.TrimSpace(reason), tt.text)
			} else {
				err = staysPut(tt.text)
			}
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("%v, want no error", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("%v, want an error saying %q", err, tt.err)
			}
		})
	}
}
