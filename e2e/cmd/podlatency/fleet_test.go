package main

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// controllerErrors counts the ReplicaSet controller's refused syncs by
// error, names and ports made one, and leaves out everything else.
func TestControllerErrors(t *testing.T) {
	log := `=== kube-controller-manager --controllers=*
I1125 18:09:32.353181   31947 disruption.go:453] "Sending events to api server."
E1125 18:11:55.151324   31947 replica_set.go:640] "Unhandled Error" err="sync \"lat-minimal/fleet-100-7b499c5f97\" failed with Internal error occurred: failed calling webhook \"minimal.bench.graft.dev\": failed to call webhook: Post \"https://127.0.0.1:36431/mutate?timeout=3s\": context deadline exceeded" logger="UnhandledError"
E1125 18:12:39.083011   31947 replica_set.go:640] "Unhandled Error" err="sync \"lat-minimal/fleet-152-7458859884\" failed with Internal error occurred: failed calling webhook \"minimal.bench.graft.dev\": failed to call webhook: Post \"https://127.0.0.1:40001/mutate?timeout=3s\": context deadline exceeded" logger="UnhandledError"
E1125 18:12:40.000000   31947 replica_set.go:640] "Unhandled Error" err="sync \"fleet-graft/fleet-007-c5d84459f\" failed with pods \"fleet-007-c5d84459f-\" is forbidden: ValidatingAdmissionPolicy 'graft-injection-required' denied request" logger="UnhandledError"
E1125 18:12:41.000000   31947 replica_set.go:640] "Unhandled Error" err="sync \"lat-minimal/fleet-148-cfcb489d5\" failed with read version: 36744 is not as new as written version: 36807 for group resource pods" logger="UnhandledError"
E1125 18:12:42.000000   31947 deployment_controller.go:500] "Unhandled Error" err="sync \"lat-minimal/fleet-148\" failed with Operation cannot be fulfilled" logger="UnhandledError"
`
	file := filepath.Join(t.TempDir(), "kube-controller-manager.log")
	if err := os.WriteFile(file, []byte(log), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := controllerErrors(file)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{
		`Internal error occurred: failed calling webhook "minimal.bench.graft.dev": failed to call webhook: Post "https://127.0.0.1:…/mutate?timeout=3s": context deadline exceeded`: 2,
		`pods "fleet-…" is forbidden: ValidatingAdmissionPolicy 'graft-injection-required' denied request`:                                                                           1,
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %v\nwant %v", got, want)
	}
}
