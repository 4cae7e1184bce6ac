package deploy

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selectorRoles are the parts of a release with Pods of their own.
var selectorRoles = []string{"graft", "audit", "watchdog"}

// selector is one selector a release renders: where it is, what it
// selects (Pods or Services) and whose (graft's, the audit exporter's or
// the watchdog's).
type selector struct {
	where, kind, role string
	sel               *metav1.LabelSelector
}

// releaseSelectors are the labels of one release's Pods and Services, by
// role (selectorRoles), and every selector it renders.
type releaseSelectors struct {
	podLabels, serviceLabels map[string]map[string]string
	selectors                []selector
}

func selectorsOf(t *testing.T, out output, fullname string) releaseSelectors {
	t.Helper()
	r := releaseSelectors{podLabels: map[string]map[string]string{}, serviceLabels: map[string]map[string]string{}}
	role := func(name string) string {
		for _, r := range []string{"audit", "watchdog"} {
			if name == fullname+"-"+r {
				return r
			}
		}
		if name != fullname {
			t.Fatalf("%s: neither %s nor %s-audit nor %s-watchdog", name, fullname, fullname, fullname)
		}
		return "graft"
	}
	for _, o := range out {
		where := o.kind + " " + o.name
		switch o.kind {
		case "Deployment":
			d := one[appsv1.Deployment](t, out, o.kind, o.name)
			r.podLabels[role(o.name)] = d.Spec.Template.Labels
			r.selectors = append(r.selectors, selector{where + " spec.selector", "Pod", role(o.name), d.Spec.Selector})
			for i, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
				r.selectors = append(r.selectors, selector{fmt.Sprintf("%s topologySpreadConstraints[%d]", where, i), "Pod", role(o.name), c.LabelSelector})
			}
		case "Service":
			s := one[corev1.Service](t, out, o.kind, o.name)
			r.serviceLabels[role(o.name)] = s.Labels
			r.selectors = append(r.selectors, selector{where + " spec.selector", "Pod", role(o.name), &metav1.LabelSelector{MatchLabels: s.Spec.Selector}})
		case "PodDisruptionBudget":
			p := one[policyv1.PodDisruptionBudget](t, out, o.kind, o.name)
			r.selectors = append(r.selectors, selector{where + " spec.selector", "Pod", role(o.name), p.Spec.Selector})
		case "ServiceMonitor":
			sm := oneLoose[serviceMonitor](t, out, o.kind, o.name)
			r.selectors = append(r.selectors, selector{where + " spec.selector", "Service", role(o.name), &sm.Spec.Selector})
		}
	}
	for _, role := range selectorRoles {
		if r.podLabels[role] == nil || r.serviceLabels[role] == nil {
			t.Fatalf("the render lacks the %s Deployment or Service", role)
		}
	}
	return r
}

// TestChartReleasesDoNotOverlap: two releases of the chart in one
// namespace, the audit exporter and the watchdog included, each select
// only their own Pods and Services, with every selector the chart renders;
// graft's selectors never take the exporter's or the watchdog's Pods, nor
// the reverse.
func TestChartReleasesDoNotOverlap(t *testing.T) {
	h := newHelm(t)
	render := func(name string) releaseSelectors {
		out, err := h.run(t, "template", name, chartDir, "--namespace", namespace, "--kube-version", kubeVersion,
			"--set", "monitoring.serviceMonitor.enabled=true", "--set", "certificates.source=existingSecret",
			"--set", "audit.rbac.enabled=true", "--set", "audit.exporter.enabled=true", "--set", "watchdog.enabled=true")
		if err != nil {
			t.Fatal(err)
		}
		return selectorsOf(t, parseObjects(t, out), name)
	}
	releases := map[string]releaseSelectors{"graft": render("graft"), "graft-canary": render("graft-canary")}
	for name, r := range releases {
		for other, o := range releases {
			for _, s := range r.selectors {
				for _, role := range selectorRoles {
					labels := o.podLabels[role]
					if s.kind == "Service" {
						labels = o.serviceLabels[role]
					}
					want := name == other && s.role == role
					if got := selects(s.sel, labels); got != want {
						t.Errorf("release %s: %s selects the %s %s of release %s: %v, want %v", name, s.where, role, s.kind, other, got, want)
					}
				}
			}
		}
	}
}
