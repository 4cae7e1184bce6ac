package templates

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// lintReserved checks the declarations of what app containers may not
// share with the template, on its defaults' render: each reserved uid is
// one its containers run as, and each overridable env entry names an env
// var it adds to app containers.
func (t *Template) lintReserved(f *Fragment) []string {
	var out []string
	var uids []int64
	for _, l := range [][]Element{f.InitContainers, f.Containers} {
		for _, el := range l {
			var c corev1.Container
			if json.Unmarshal(el.Raw, &c) == nil && c.SecurityContext != nil && c.SecurityContext.RunAsUser != nil {
				uids = append(uids, *c.SecurityContext.RunAsUser)
			}
		}
	}
	for _, u := range t.ReservedUIDs {
		if !slices.Contains(uids, u) {
			out = append(out, fmt.Sprintf("reservedUIDs: %d is the runAsUser of none of the template's containers", u))
		}
	}
	for _, o := range t.OverridableEnv {
		probe := Template{OverridableEnv: []string{o}}
		if !slices.ContainsFunc(f.AppEnv, func(e Element) bool { return probe.EnvOverridable(e.Name) }) {
			out = append(out, fmt.Sprintf("overridableEnv: %q names no env var of appContainers.env", o))
		}
	}
	return out
}
