package deploy

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// releaseSelectors are what one release's objects select: the labels of
// its Pods and of its Service, and every selector it renders, named by
// where it is.
type releaseSelectors struct {
	podLabels, serviceLabels map[string]string
	podSelectors             map[string]*metav1.LabelSelector
	serviceSelectors         map[string]*metav1.LabelSelector
}

func selectorsOf(t *testing.T, out output) releaseSelectors {
	t.Helper()
	r := releaseSelectors{podSelectors: map[string]*metav1.LabelSelector{}, serviceSelectors: map[string]*metav1.LabelSelector{}}
	for _, o := range out {
		where := o.kind + " " + o.name
		switch o.kind {
		case "Deployment":
			d := one[appsv1.Deployment](t, out, o.kind, o.name)
			r.podLabels = d.Spec.Template.Labels
			r.podSelectors[where+" spec.selector"] = d.Spec.Selector
			for i, c := range d.Spec.Template.Spec.TopologySpreadConstraints {
				r.podSelectors[fmt.Sprintf("%s topologySpreadConstraints[%d]", where, i)] = c.LabelSelector
			}
		case "Service":
			s := one[corev1.Service](t, out, o.kind, o.name)
			r.serviceLabels = s.Labels
			r.podSelectors[where+" spec.selector"] = &metav1.LabelSelector{MatchLabels: s.Spec.Selector}
		case "PodDisruptionBudget":
			p := one[policyv1.PodDisruptionBudget](t, out, o.kind, o.name)
			r.podSelectors[where+" spec.selector"] = p.Spec.Selector
		case "ServiceMonitor":
			var sm struct {
				Spec struct {
					Selector metav1.LabelSelector `json:"selector"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(o.yaml, &sm); err != nil {
				t.Fatal(err)
			}
			r.serviceSelectors[where+" spec.selector"] = &sm.Spec.Selector
		}
	}
	if r.podLabels == nil || r.serviceLabels == nil || len(r.serviceSelectors) == 0 {
		t.Fatal("the render lacks a Deployment, a Service or a ServiceMonitor")
	}
	return r
}

// TestChartReleasesDoNotOverlap: two releases of the chart in one
// namespace each select only their own Pods and Service, with every
// selector the chart renders.
func TestChartReleasesDoNotOverlap(t *testing.T) {
	h := newHelm(t)
	render := func(name string) releaseSelectors {
		out, err := h.run(t, "template", name, chartDir, "--namespace", namespace, "--kube-version", kubeVersion,
			"--set", "monitoring.serviceMonitor.enabled=true", "--set", "certificates.source=existingSecret")
		if err != nil {
			t.Fatal(err)
		}
		return selectorsOf(t, parseObjects(t, out))
	}
	releases := map[string]releaseSelectors{"graft": render("graft"), "graft-canary": render("graft-canary")}
	for name, r := range releases {
		for other, o := range releases {
			own := name == other
			for where, sel := range r.podSelectors {
				if got := selects(sel, o.podLabels); got != own {
					t.Errorf("release %s: %s selects the Pods of release %s: %v", name, where, other, got)
				}
			}
			for where, sel := range r.serviceSelectors {
				if got := selects(sel, o.serviceLabels); got != own {
					t.Errorf("release %s: %s selects the Service of release %s: %v", name, where, other, got)
				}
			}
		}
	}
}
