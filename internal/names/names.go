// Package names is the one home of every name users see: the labels,
// annotations and annotation prefixes graft reads or writes on objects
// users own, the namespace and names deploy/ installs graft under, and
// the command-line flags that messages outside cmd/graft name. Code that
// uses one of them names it from here, so a rename is one edit (for a
// flag, cmd/graft defines it with the same constant) and
// docs/reference/names.md (generated from All) cannot drift from the code.
//
// The constants are plain strings so the engine's allocation-free scanner
// compares against them directly.
package names

import "strings"

// Prefix starts every graft label and annotation on a Pod or Namespace;
// keys under it are reserved for graft.
const Prefix = "graft.dev/"

// Domain is graft's DNS domain: a label or annotation key whose prefix
// is Domain or a subdomain of it (redirect.graft.dev/mode) is graft's.
const Domain = "graft.dev"

// Reserved reports whether a label or annotation key is in graft's
// domains: its prefix (before the "/") is Domain or ends in "."+Domain,
// in any case. A Pod may set only the per-Pod ones: Templates,
// parameter annotations, the label Inject and, where its profile allows,
// the label Revision (docs/concepts/guarantee.md).
func Reserved(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok || len(prefix) < len(Domain) {
		return false
	}
	rest := prefix[:len(prefix)-len(Domain)]
	return strings.EqualFold(prefix[len(rest):], Domain) && (rest == "" || rest[len(rest)-1] == '.')
}

// ParamAnnotationKey reports whether key has the form of a parameter
// annotation, graft.dev/<template>.<param>.
func ParamAnnotationKey(key string) bool {
	rest, ok := strings.CutPrefix(key, Prefix)
	if !ok {
		return false
	}
	tmpl, param, ok := strings.Cut(rest, ".")
	return ok && tmpl != "" && param != ""
}

// Labels.
const (
	// Inject on a namespace names its profile (EnabledValue: the default
	// profile); on a Pod, OptOutValue opts the Pod out.
	Inject = Prefix + "inject"
	// Injected is set by graft on every Pod it injects; the value is the
	// revision it injected from.
	Injected = Prefix + "injected"
	// Revision on a namespace (or a Pod, where its profile allows) selects
	// a template revision or a tag pointing at one.
	Revision = Prefix + "rev"
	// Watchdog on a namespace, set to EnabledValue, opts its Pods in to
	// graft watchdog: owners of Pods admitted without graft are
	// restarted.
	Watchdog = Prefix + "watchdog"
	// ExportProfile marks the admission policies `graft export` writes
	// with the profile they were compiled from.
	ExportProfile = "export.graft.dev/profile"
)

// Values of Inject.
const (
	// EnabledValue selects the default profile.
	EnabledValue = "enabled"
	// OptOutValue on a Pod opts it out of injection.
	OptOutValue = "false"
)

// Annotations.
const (
	// Status is graft's versioned record of what it injected
	// (docs/reference/status-format.md).
	Status = Prefix + "status"
	// Templates overrides the profile's template list, where allowed.
	Templates = Prefix + "templates"
	// RedirectPrefix starts the annotations the mesh-proxy template writes
	// (trafficRedirect: cni) for graft's CNI plugin, graft-cni, which
	// redirects the Pod's traffic as they say (redirect.graft.dev/mode,
	// ...).
	RedirectPrefix = "redirect.graft.dev/"
)

// ParamAnnotation is the Pod annotation that sets parameter param of
// template tmpl: graft.dev/<template>.<param>.
func ParamAnnotation(tmpl, param string) string {
	return Prefix + tmpl + "." + param
}

// Names Kubernetes owns that graft reads.
const (
	// MirrorAnnotation marks the API server's copy of a static Pod.
	MirrorAnnotation = "kubernetes.io/config.mirror"
	// LimitRangerAnnotation records the defaults the LimitRanger plugin set.
	LimitRangerAnnotation = "kubernetes.io/limit-ranger"
	// NamespaceNameLabel is set on every namespace to its name.
	NamespaceNameLabel = "kubernetes.io/metadata.name"
	// OSLabel is the node label a Pod selects an operating system by.
	OSLabel = "kubernetes.io/os"
	// PodSecurityEnforce is the namespace label whose value is the Pod
	// Security level Pod Security admission enforces there.
	PodSecurityEnforce = "pod-security.kubernetes.io/enforce"
	// RestartedAt is the pod-template annotation `kubectl rollout
	// restart` sets to the time of the restart; graft rollout and the
	// watchdog restart owners the same way.
	RestartedAt = "kubectl.kubernetes.io/restartedAt"
	// AppNameLabel is Kubernetes' recommended label for an application's
	// name: deploy/ puts AppName on graft's Deployment, and the live
	// commands find graft's Deployment by it. graft puts it on every
	// object it writes.
	AppNameLabel = "app.kubernetes.io/name"
	// ManagedByLabel is the recommended label for the tool that manages
	// an object: ExportManager on the policies `graft export` writes.
	ManagedByLabel = "app.kubernetes.io/managed-by"
)

// What deploy/ calls graft and where it installs it.
const (
	// AppName is graft's app.kubernetes.io/name.
	AppName = "graft"
	// SystemNamespace is the namespace deploy/ installs graft in.
	SystemNamespace = "graft-system"
	// ServiceName is the name of graft's Service: the webhooks call it,
	// and its DNS names are on the serving certificate.
	ServiceName = "graft"
	// ExportManager is the app.kubernetes.io/managed-by of the policies
	// `graft export` writes.
	ExportManager = "graft-export"
)

// Flags of graft's commands that messages outside cmd/graft name (as
// "--"+FlagConfig, or "-"+a shorthand). cmd/graft defines each flag with
// its constant, so renaming one renames every message that names it.
const (
	FlagConfig          = "config"
	FlagTemplatesDir    = "templates-dir"
	FlagTLSCert         = "tls-cert"
	FlagTLSKey          = "tls-key"
	FlagNamespace       = "namespace"
	FlagNamespaceLabels = "namespace-labels"
	FlagSet             = "set"
	FlagInPlace         = "in-place"
	FlagApply           = "apply"
	FlagKustomize       = "kustomize"
	FlagFilename        = "filename"
	FlagFilenameShort   = "f"
	FlagRecursive       = "recursive"
	FlagRecursiveShort  = "R"
	FlagOutput          = "output"
	FlagOutputShort     = "o"
	FlagVersion         = "version"
)

// Kind says what a name is put on and how.
type Kind string

// Kinds of names.
const (
	Label            Kind = "label"
	Annotation       Kind = "annotation"
	AnnotationPrefix Kind = "annotation prefix"
)

// Name describes one name users see, for docs/reference/names.md.
type Name struct {
	Key  string
	Kind Kind
	// On says which objects carry it.
	On string
	// SetBy is who writes it: users, graft, or both.
	SetBy string
	Doc   string
}

// All returns every name graft owns, in the order the reference lists them.
func All() []Name {
	return []Name{
		{Inject, Label, "Namespace, Pod", "users",
			"On a namespace: `" + EnabledValue + "` (the default profile) or a profile's name opts its Pods in. " +
				"On a Pod: `\"" + OptOutValue + "\"` opts the Pod out."},
		{Revision, Label, "Namespace, Pod", "users",
			"A template revision, or a tag pointing at one (`stable`, `canary`); on a Pod only where its profile allows."},
		{Watchdog, Label, "Namespace", "users",
			"`" + EnabledValue + "` opts the namespace in to `graft watchdog`: the owners of its Pods admitted without graft are restarted."},
		{Injected, Label, "Pod", "graft",
			"Set on every Pod graft injects, to the revision it injected from. The guarantee policies do not pass a Pod on it: they check its sidecars ([the guarantee](../concepts/guarantee.md))."},
		{Status, Annotation, "Pod", "graft",
			"graft's record of what it injected: per template its revision, digest and the objects it added " +
				"([format](status-format.md))."},
		{Templates, Annotation, "Pod", "users",
			"A comma-separated template list replacing the profile's, where the profile allows overrides."},
		{Prefix + "<template>.<param>", AnnotationPrefix, "Pod", "users",
			"Sets one template parameter on one Pod, validated by the template; locked parameters refuse it."},
		{RedirectPrefix, AnnotationPrefix, "Pod", "graft",
			"Written by the mesh-proxy template (trafficRedirect: cni) for graft's CNI plugin, graft-cni, which redirects the Pod's traffic as they say (docs/concepts/mesh-traffic.md)."},
		{ExportProfile, Label, "admission policies", "graft",
			"The profile an exported MutatingAdmissionPolicy was compiled from."},
	}
}
