package inject

// Reason names why a request was skipped, denied or failed. The set is
// closed: metrics, logs, warnings and `graft explain` all use these names.
type Reason uint8

const (
	ReasonNone Reason = iota
	// Skip reasons.
	ReasonNotPod
	ReasonOperation
	ReasonSubresource
	ReasonOptedOut
	ReasonAlreadyInjected
	ReasonHostNetwork
	ReasonMirrorPod
	ReasonNamespaceExcluded
	ReasonNoTemplates
	// ReasonOS: the Pod runs on an operating system the profile's
	// templates do not support (spec.os.name, or a kubernetes.io/os node
	// selector or required node affinity): their containers would make
	// it invalid or could not run there.
	ReasonOS
	// Deny or failure reasons.
	ReasonInvalidParams
	ReasonTemplateSelection
	// ReasonConflict: the Pod holds a container, init container or volume
	// named like one graft injects that graft did not inject, or one of
	// its containers uses a port, port name, uid, mount path or env var
	// a template's would, and the profile's onConflict is deny.
	ReasonConflict
	// ReasonPodSecurity: what graft would inject needs a Pod Security
	// level above the profile's podSecurity.maxLevel or the namespace's
	// enforced level.
	ReasonPodSecurity
	// ReasonPodResources: the Pod sets pod-level resources and the
	// profile's podResources is deny.
	ReasonPodResources
	ReasonBudgetExceeded
	ReasonOverload
	ReasonInternal
	// ReasonTooLarge: injecting would pass a limit on what graft hands
	// the API server (Config.MaxPatchBytes, the annotations' total size).
	ReasonTooLarge
	numReasons
)

var reasonNames = [numReasons]string{
	ReasonNone:              "none",
	ReasonNotPod:            "not-pod",
	ReasonOperation:         "operation",
	ReasonSubresource:       "subresource",
	ReasonOptedOut:          "opted-out",
	ReasonAlreadyInjected:   "already-injected",
	ReasonHostNetwork:       "host-network",
	ReasonMirrorPod:         "mirror-pod",
	ReasonNamespaceExcluded: "namespace-excluded",
	ReasonNoTemplates:       "no-templates",
	ReasonOS:                "os",
	ReasonInvalidParams:     "invalid-params",
	ReasonTemplateSelection: "template-selection",
	ReasonConflict:          "conflict",
	ReasonPodSecurity:       "pod-security",
	ReasonPodResources:      "pod-resources",
	ReasonBudgetExceeded:    "budget-exceeded",
	ReasonOverload:          "overload",
	ReasonInternal:          "internal-error",
	ReasonTooLarge:          "too-large",
}

// String returns the reason's stable name.
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Reasons lists every reason, for pre-binding metric labels.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// IsSkip reports whether r is a reason to leave a Pod alone.
func (r Reason) IsSkip() bool { return r >= ReasonNotPod && r <= ReasonOS }
