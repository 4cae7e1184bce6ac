// Package templates owns graft's sidecar templates: the embedded built-in set,
// loading and validating a set from a directory, typed parameters, and
// rendering a template into a Pod fragment held as JSON bytes.
//
// Rendering is not on the request path: the engine renders once per distinct
// parameter set and caches the Fragment.
package templates

// Placement says where a template's initContainers go, as a group in
// fragment order: native sidecars (restartPolicy: Always) and ordinary
// init containers alike.
type Placement string

const (
	// PlaceFirst puts the init containers at index 0, ahead of everything.
	PlaceFirst Placement = "first"
	// PlaceBeforeInit puts them after existing native sidecars
	// (restartPolicy: Always) but before the first ordinary init container.
	PlaceBeforeInit Placement = "before-init"
	// PlaceLast appends them.
	PlaceLast Placement = "last"
)

// Element is one named list element of a Fragment, as compact JSON.
type Element struct {
	Name string
	// MountPath is set for volumeMounts only: mounts match by name or path.
	MountPath string
	Raw       []byte
}

// Fragment is a rendered template: what graft adds to a Pod. Every Raw is
// compact JSON with sorted keys, so equal inputs give equal bytes.
type Fragment struct {
	Containers       []Element
	InitContainers   []Element
	Volumes          []Element
	ImagePullSecrets []Element
	// Annotations and Labels are sorted by key; values are plain strings.
	Annotations []KV
	Labels      []KV
	// AppEnv and AppVolumeMounts are added to every app container
	// (spec.containers that graft did not inject) that lacks them.
	AppEnv          []Element
	AppVolumeMounts []Element
}

// KV is a metadata key and value.
type KV struct{ Key, Value string }

// ParamType is the type of a template parameter.
type ParamType string

const (
	// TypeString is any string, or one matching pattern; the fragment sees
	// the string.
	TypeString ParamType = "string"
	// TypeInt is a decimal integer within min and max; the fragment sees an
	// int64.
	TypeInt ParamType = "int"
	// TypeBool is "true" or "false"; the fragment sees a bool.
	TypeBool ParamType = "bool"
	// TypeQuantity is a Kubernetes quantity such as 100m or 64Mi within min
	// and max; the fragment sees the string as written.
	TypeQuantity ParamType = "quantity"
	// TypeEnum is one of values; the fragment sees the string.
	TypeEnum ParamType = "enum"
	// TypeDuration is a Go duration such as 30s or 5m within min and max;
	// the fragment sees the string as written.
	TypeDuration ParamType = "duration"
	// TypeList is comma-separated items (spaces around each are trimmed, no
	// empty items), each matching pattern, at least min and at most max of
	// them; the fragment sees a list of strings.
	TypeList ParamType = "list"
)

// Format is what the text of a string parameter, or of each item of a
// list, must be, past its pattern.
type Format string

const (
	// FormatImage is a container image reference,
	// [registry[:port]/]path[:tag][@algorithm:hex], as container runtimes
	// parse it, without ".." and without empty path segments. A profile's
	// allowedImages bound the images graft injects further.
	FormatImage Format = "image"
)
