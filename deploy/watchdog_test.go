package deploy

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// watchdogGrants is what graft watchdog may do, as docs/tasks/rollout.md
// writes it down: per API group and resource, the verbs. Leases are the
// Role's, in the watchdog's namespace; the rest is the ClusterRole's.
var watchdogGrants = map[string][]string{
	"/namespaces":                 {"list", "watch"},
	"/pods":                       {"list", "watch", "create"}, // create: dry runs only
	"/events":                     {"create", "patch"},
	"apps/replicasets":            {"get"},
	"apps/deployments":            {"get", "patch"},
	"apps/statefulsets":           {"get", "patch"},
	"apps/daemonsets":             {"get", "patch"},
	"policy/poddisruptionbudgets": {"list"},
	"coordination.k8s.io/leases":  {"get", "create", "update"},
}

// checkWatchdogRBAC holds the watchdog's objects to what it needs: its
// roles grant nothing beyond watchdogGrants (leases only in the Role, no
// wildcards, no resource names left open), its bindings bind its own
// ServiceAccount alone, and its Deployment runs `graft watchdog` as that
// ServiceAccount.
func checkWatchdogRBAC(t *testing.T, kind, name string, doc []byte) {
	t.Helper()
	switch kind {
	case "ClusterRole", "Role":
		var r rbacv1.ClusterRole // a Role's fields are a subset
		if err := yaml.Unmarshal(doc, &r); err != nil {
			t.Fatalf("%s %s: %v", kind, name, err)
		}
		if len(r.Rules) == 0 {
			t.Errorf("%s %s grants nothing", kind, name)
		}
		for _, rule := range r.Rules {
			for _, g := range rule.APIGroups {
				for _, res := range rule.Resources {
					key := g + "/" + res
					allowed, ok := watchdogGrants[key]
					if !ok || (key == "coordination.k8s.io/leases") != (kind == "Role") {
						t.Errorf("%s %s grants %s: not the watchdog's to have here", kind, name, key)
						continue
					}
					for _, v := range rule.Verbs {
						if !slices.Contains(allowed, v) {
							t.Errorf("%s %s allows %q on %s: the watchdog needs %v", kind, name, v, key, allowed)
						}
					}
				}
			}
		}
	case "ClusterRoleBinding", "RoleBinding":
		var b rbacv1.ClusterRoleBinding
		if err := yaml.Unmarshal(doc, &b); err != nil {
			t.Fatalf("%s %s: %v", kind, name, err)
		}
		if len(b.Subjects) != 1 || b.Subjects[0].Kind != "ServiceAccount" || !strings.HasSuffix(b.Subjects[0].Name, "-watchdog") {
			t.Errorf("%s %s binds %v, want the watchdog's ServiceAccount alone", kind, name, b.Subjects)
		}
	case "ServiceAccount", "Service", "ServiceMonitor":
	case "Deployment":
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict(doc, &d); err != nil {
			t.Fatalf("%s %s: %v", kind, name, err)
		}
		ps := d.Spec.Template.Spec
		if !strings.HasSuffix(ps.ServiceAccountName, "-watchdog") || len(ps.Containers) != 1 || len(ps.Containers[0].Args) == 0 || ps.Containers[0].Args[0] != "watchdog" {
			t.Errorf("Deployment %s: want graft watchdog run as the watchdog's ServiceAccount, got %s running %v", name, ps.ServiceAccountName, ps.Containers[0].Args)
		}
	default:
		t.Errorf("%s %s: the watchdog makes only its roles, their bindings, a ServiceAccount, its Deployment and Service", kind, name)
	}
}

// TestWatchdogComponent: the watchdog component runs `graft watchdog` as
// its own ServiceAccount with no more RBAC than it needs, on graft's own
// configuration and templates, under the restricted Pod Security level,
// with labels graft's selectors do not match; the monitoring component
// scrapes it.
func TestWatchdogComponent(t *testing.T) {
	out := overlay(t, "resources: [../cert-manager]\ncomponents: [../../components/watchdog, ../../components/monitoring]\n")
	for _, o := range out {
		if strings.HasSuffix(o.name, "-watchdog") || o.name == "graft-watchdog" {
			checkWatchdogRBAC(t, o.kind, o.name, o.yaml)
		}
	}
	graft := one[appsv1.Deployment](t, out, "Deployment", "graft")
	wd := one[appsv1.Deployment](t, out, "Deployment", "graft-watchdog")
	ps := wd.Spec.Template.Spec
	c := ps.Containers[0]
	for _, want := range []string{"--config=/etc/graft/config/config.yaml", "--templates-dir=/etc/graft/templates", "--metrics-addr=:9092"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	if c.Image != graft.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("the watchdog runs %s, graft %s", c.Image, graft.Spec.Template.Spec.Containers[0].Image)
	}
	var podName bool
	for _, e := range c.Env {
		podName = podName || (e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name")
	}
	if !podName {
		t.Error("POD_NAME is not the Pod's name: replicas would share an identity in the Lease")
	}
	svc, wdSvc := checkCompanion(t, out, graft, wd, "the watchdog")
	sm := oneLoose[serviceMonitor](t, out, "ServiceMonitor", "graft-watchdog")
	if !selects(&sm.Spec.Selector, wdSvc.Labels) || selects(&sm.Spec.Selector, svc.Labels) ||
		len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != "metrics" {
		t.Errorf("ServiceMonitor graft-watchdog %+v: want the watchdog's Service alone, port metrics", sm.Spec)
	}
}
