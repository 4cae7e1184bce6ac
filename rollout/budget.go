package rollout

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// Budget is what the plan needs of a PodDisruptionBudget.
type Budget struct {
	Name string
	// Selector is the budget's; nil selects no Pod (policy/v1: a null
	// selector selects nothing, an empty one every Pod of the namespace).
	Selector labels.Selector
	// DisruptionsAllowed is status.disruptionsAllowed.
	DisruptionsAllowed int32
	// Current is false while the disruption controller has not yet
	// observed the budget's latest spec (status.observedGeneration <
	// metadata.generation): its status says nothing about now.
	Current bool
}

// Blocking returns the budgets that forbid restarting an owner whose Pods
// carry podLabels: a budget selecting them that allows no disruption at
// this moment, or whose status is not current. A restart replaces every
// Pod, so graft restarts only where an eviction of one would be allowed
// now; it never waits for a budget to allow one.
func Blocking(budgets []Budget, podLabels map[string]string) []Budget {
	var out []Budget
	set := labels.Set(podLabels)
	for _, b := range budgets {
		if b.Selector == nil || !b.Selector.Matches(set) {
			continue
		}
		if !b.Current || b.DisruptionsAllowed <= 0 {
			out = append(out, b)
		}
	}
	return out
}

// BlockedMessage says why budgets block a restart.
func BlockedMessage(budgets []Budget) string {
	var parts []string
	for _, b := range budgets {
		if !b.Current {
			parts = append(parts, fmt.Sprintf("PodDisruptionBudget %s: status not yet observed", b.Name))
			continue
		}
		parts = append(parts, fmt.Sprintf("PodDisruptionBudget %s allows %d disruptions", b.Name, b.DisruptionsAllowed))
	}
	return strings.Join(parts, "; ")
}
