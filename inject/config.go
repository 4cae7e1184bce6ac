package inject

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// FailureMode says how a profile answers when graft cannot inject: the
// latency budget ran out, the server is overloaded, or an internal error.
type FailureMode string

const (
	// FailAllow admits the Pod unchanged, with a warning. The shipped
	// ValidatingAdmissionPolicy then decides whether it may exist.
	FailAllow FailureMode = "allow"
	// FailDeny refuses the Pod with a message.
	FailDeny FailureMode = "deny"
)

// InvalidParamsMode says how a profile answers a Pod whose
// graft.dev/<template>.<param> annotation fails validation.
type InvalidParamsMode string

const (
	// InvalidDeny refuses the Pod, naming annotation, value and rule.
	InvalidDeny InvalidParamsMode = "deny"
	// InvalidUseDefault injects with the default value and a warning.
	InvalidUseDefault InvalidParamsMode = "default"
)

// ConflictMode says how a profile answers a Pod that holds a container,
// init container or volume named like one a template graft serves
// renders, which is not graft's render for the Pod (whatever
// graft.dev/status says), or whose containers collide with what a
// template adds.
type ConflictMode string

const (
	// ConflictDeny refuses the Pod, naming the object, the template and
	// this option.
	ConflictDeny ConflictMode = "deny"
	// ConflictKeep admits the Pod with a warning, leaves the Pod's object
	// as it is (recorded under kept in graft.dev/status) and injects
	// nothing of that template: its other parts may depend on the object
	// it meant to add (a volume its sidecar and the app containers mount).
	ConflictKeep ConflictMode = "keep"
)

// Profile is a named injection recipe, selected by the namespace label
// graft.dev/inject=<profile> and served on /inject/<profile>.
type Profile struct {
	// Templates are injected in this order.
	Templates []string `json:"templates"`
	// AllowedTemplates bounds what a Pod may ask for with the
	// graft.dev/templates annotation. Empty: the annotation may only
	// reorder or narrow Templates.
	AllowedTemplates []string `json:"allowedTemplates,omitempty"`
	// Params sets template parameters for this profile: template -> param -> value.
	// Pod annotations override them.
	Params map[string]map[string]string `json:"params,omitempty"`
	// OnInvalidParams defaults to "deny".
	OnInvalidParams InvalidParamsMode `json:"onInvalidParams,omitempty"`
	// FailureMode defaults to "allow".
	FailureMode FailureMode `json:"failureMode,omitempty"`
	// OnConflict answers a Pod that holds a container, init container or
	// volume named like one a template graft serves renders, which is not
	// graft's render for the Pod (whatever graft.dev/status says), or
	// whose containers collide with what a template adds (a port, a
	// reserved uid, an env var, a mount path). Defaults to "deny".
	OnConflict ConflictMode `json:"onConflict,omitempty"`
	// InjectHostNetwork injects into hostNetwork Pods too (default: skip them,
	// since a proxy or port-binding agent would share the node's network).
	InjectHostNetwork bool `json:"injectHostNetwork,omitempty"`
	// PodRevision lets a Pod's own graft.dev/rev label choose its revision
	// or tag, overriding its namespace's (default: the namespace decides).
	PodRevision bool `json:"podRevision,omitempty"`
	// LockedParams are parameters a Pod's annotations cannot change, each
	// written <template>.<param> (mesh-proxy.image), or *.<param> for that
	// parameter of every template the profile may inject that declares
	// it: the profile's value, else the template's default, holds. An
	// annotation setting another value is answered per onInvalidParams.
	// The built-in profiles lock what would let a Pod get out of its
	// sidecars' reach: *.image, *.proxyInitImage, *.trafficRedirect,
	// *.excludeInboundPorts, *.excludeOutboundPorts, *.endpoint, *.tls
	// and *.address.
	LockedParams []string `json:"lockedParams,omitempty"`
	// AllowedImages, when not empty, admit every image graft injects (the
	// rendered containers' and init containers', whichever parameter or
	// template text wrote them). An entry admits the image it names and
	// the images that continue it at a boundary: a "/" (a repository
	// under it), a ":" (a tag) or an "@" (a digest).
	// docker.io/envoyproxy/envoy admits docker.io/envoyproxy/envoy:v1.33.0
	// and docker.io/envoyproxy/envoy@sha256:..., never
	// docker.io/envoyproxy/envoy-evil:1; ghcr.io/graftdev/ admits every
	// repository under ghcr.io/graftdev, and docker.io/envoyproxy/envoy:
	// every tag. Entries and images are matched as written (docker.io is
	// not implied). An entry must be an image reference, or one followed
	// by "/", ":" or "@". An image that is not a reference (with "..",
	// an empty path segment, whitespace, ...) is refused whatever this
	// lists. A profile whose own values render an image it does not
	// admit is refused at start; a Pod whose annotations do is answered
	// per onInvalidParams.
	AllowedImages []string `json:"allowedImages,omitempty"`
	// PodSecurity bounds the Pod Security level what the profile injects
	// may need (docs/concepts/pod-security.md).
	PodSecurity PodSecurity `json:"podSecurity,omitzero"`
	// PodResources answers a Pod that sets pod-level resources
	// (spec.resources): add (the default) adds the requests and limits of
	// the containers graft injects to its pod-level figures, so that the
	// Pod stays valid; deny refuses it, naming what the sidecars request
	// (docs/concepts/pod-security.md).
	PodResources PodResourcesMode `json:"podResources,omitempty"`
}

// Config is the engine's configuration.
type Config struct {
	// Revision names the revision this configuration is (label values
	// graft.dev/rev select it; graft.dev/status records it). Defaults to
	// DefaultRevision.
	Revision string `json:"revision,omitempty"`
	// DefaultProfile is served on /inject. Defaults to "enabled".
	DefaultProfile string `json:"defaultProfile,omitempty"`
	// Profiles by name.
	Profiles map[string]Profile `json:"profiles"`
	// ExcludedNamespaces are never injected, whatever their labels.
	// Defaults to kube-system, kube-public and kube-node-lease.
	ExcludedNamespaces []string `json:"excludedNamespaces,omitempty"`
	// MaxPatchBytes bounds the JSON patch graft returns for one Pod; a
	// Pod whose patch would be larger is answered per its profile's
	// failureMode (reason too-large). Defaults to 1 MiB (1048576): a
	// patch only adds to the Pod, which etcd stores whole under its
	// default 1.5 MiB request limit.
	MaxPatchBytes int `json:"maxPatchBytes,omitempty"`
}

// BuiltinLocks returns the parameters every built-in profile locks: what a
// Pod author could otherwise use to get their app out of the sidecars'
// reach. The images, so that no Pod swaps the sidecar that runs beside
// it, nor what the redirection runs as root with NET_ADMIN; the mesh proxy's trafficRedirect (none: nothing goes through the
// proxy) and its excluded ports (traffic on them bypasses it); where the
// agents send what they collect and how (the telemetry and log
// endpoints, the telemetry agent's tls), and the Vault server the
// secrets agent presents the Pod's service account token to (address).
// The rest (resources, log levels, the Vault role and paths, ...) is the
// app's to tune.
func BuiltinLocks() []string {
	return []string{"*.image", "*.proxyInitImage", "*.trafficRedirect", "*.excludeInboundPorts", "*.excludeOutboundPorts",
		"*.endpoint", "*.tls", "*.address"}
}

// DefaultRevision is the name of a configuration's revision when it
// names none.
const DefaultRevision = "default"

// ErrConfig marks an invalid configuration.
var ErrConfig = errors.New("invalid configuration")

// Defaulted returns c with every default filled in, validated without
// templates (New also checks the templates the profiles name).
func (c Config) Defaulted() (Config, error) {
	c = c.clone()
	err := c.defaults()
	return c, err
}

// defaults fills in defaults and validates c, without templates.
func (c *Config) defaults() error {
	if c.Revision == "" {
		c.Revision = DefaultRevision
	}
	if c.DefaultProfile == "" {
		c.DefaultProfile = "enabled"
	}
	if c.ExcludedNamespaces == nil {
		c.ExcludedNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}
	}
	if c.MaxPatchBytes == 0 {
		c.MaxPatchBytes = DefaultMaxPatchBytes
	}
	if c.MaxPatchBytes < 0 {
		return fmt.Errorf("%w: maxPatchBytes %d: want a positive number of bytes", ErrConfig, c.MaxPatchBytes)
	}
	if err := CheckName(c.Revision); err != nil {
		return fmt.Errorf("%w: revision: %w", ErrConfig, err)
	}
	if len(c.Profiles) == 0 {
		return fmt.Errorf("%w: no profiles", ErrConfig)
	}
	if _, ok := c.Profiles[c.DefaultProfile]; !ok {
		return fmt.Errorf("%w: default profile %q is not defined", ErrConfig, c.DefaultProfile)
	}
	for name, p := range c.Profiles {
		if err := p.defaults(); err != nil {
			return fmt.Errorf("%w: profile %q: %w", ErrConfig, name, err)
		}
		c.Profiles[name] = p
	}
	return nil
}

func (p *Profile) defaults() error {
	if p.OnInvalidParams == "" {
		p.OnInvalidParams = InvalidDeny
	}
	if p.FailureMode == "" {
		p.FailureMode = FailAllow
	}
	if p.OnConflict == "" {
		p.OnConflict = ConflictDeny
	}
	if err := p.PodSecurity.defaults(); err != nil {
		return err
	}
	if p.PodResources == "" {
		p.PodResources = PodResourcesAdd
	}
	switch p.PodResources {
	case PodResourcesAdd, PodResourcesDeny:
	default:
		return fmt.Errorf("podResources %q: want %q or %q", p.PodResources, PodResourcesAdd, PodResourcesDeny)
	}
	switch p.OnInvalidParams {
	case InvalidDeny, InvalidUseDefault:
	default:
		return fmt.Errorf("onInvalidParams %q: want %q or %q", p.OnInvalidParams, InvalidDeny, InvalidUseDefault)
	}
	switch p.FailureMode {
	case FailAllow, FailDeny:
	default:
		return fmt.Errorf("failureMode %q: want %q or %q", p.FailureMode, FailAllow, FailDeny)
	}
	switch p.OnConflict {
	case ConflictDeny, ConflictKeep:
	default:
		return fmt.Errorf("onConflict %q: want %q or %q", p.OnConflict, ConflictDeny, ConflictKeep)
	}
	if len(p.Templates) == 0 {
		return errors.New("no templates")
	}
	if dup := firstDuplicate(p.Templates); dup != "" {
		return fmt.Errorf("template %q listed twice", dup)
	}
	return p.checkGuards()
}

// CheckName accepts a revision or tag name: a DNS-1123 label, since it is
// the value of the label graft.dev/rev and part of webhook names.
func CheckName(name string) error {
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("%q is not a valid name: %s", name, strings.Join(errs, "; "))
	}
	return nil
}

func firstDuplicate(names []string) string {
	for i, n := range names {
		if slices.Contains(names[:i], n) {
			return n
		}
	}
	return ""
}

// DefaultConfig is the configuration graft serves with when given none:
// "enabled" injects the mesh proxy and lets a Pod add the other built-in
// templates with graft.dev/templates; each built-in template also has a
// profile of its own name; and two profiles show combinations, whose list
// order is the injection order.
func DefaultConfig() Config {
	only := func(names ...string) Profile { return Profile{Templates: names, LockedParams: BuiltinLocks()} }
	return Config{
		DefaultProfile: "enabled",
		Profiles: map[string]Profile{
			"enabled": {
				Templates:        []string{"mesh-proxy"},
				AllowedTemplates: []string{"mesh-proxy", "secrets-agent", "otel-agent", "log-shipper"},
				LockedParams:     BuiltinLocks(),
			},
			"mesh-proxy":    only("mesh-proxy"),
			"log-shipper":   only("log-shipper"),
			"otel-agent":    only("otel-agent"),
			"secrets-agent": only("secrets-agent"),
			// Both start before the Pod's init containers; the telemetry agent first.
			"otel-agent-log-shipper": only("otel-agent", "log-shipper"),
			// The proxy first, so the secrets agent reaches Vault through the mesh.
			"mesh-proxy-secrets-agent": only("mesh-proxy", "secrets-agent"),
		},
	}
}
