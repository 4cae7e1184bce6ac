package registration

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// Sidecar is what a profile's guarantee accepts for one container name.
type Sidecar struct {
	// Template is the template that adds it.
	Template string
	// Kinds it may be added as: native, init or container.
	Kinds []string
	// Images it may run: exact images, and prefixes ending in "*" ("*":
	// any image).
	Images []string
}

// ProfileSidecars returns the containers profile of cfg may inject with
// the templates of set, as the guarantee checks them: for `graft export`,
// whose guarantee checks the same.
func ProfileSidecars(cfg inject.Config, set *templates.Set, profile string) (map[string]Sidecar, error) {
	in, err := guaranteeData(inject.RevisionsConfig{Revisions: []inject.RevisionConfig{{Config: cfg, Templates: set}}}, Options{Namespace: "graft-system"})
	if err != nil {
		return nil, err
	}
	for _, p := range in.profiles {
		if p.name != profile {
			continue
		}
		out := map[string]Sidecar{}
		for n, s := range p.sidecars {
			out[n] = Sidecar{Template: s.Template, Kinds: s.Kinds, Images: s.Images}
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w %q", inject.ErrUnknownProfile, profile)
}

// SidecarExpr is a CEL expression that holds when the Pod container bound
// to c, found among the init containers (init) or not, is one of sidecars
// as graft injects it: its kind and its image.
func SidecarExpr(sidecars map[string]Sidecar, init bool) (string, error) {
	p := &profileSpec{sidecars: map[string]*sidecar{}}
	for n, s := range sidecars {
		p.sidecars[n] = &sidecar{Template: s.Template, Kinds: s.Kinds, Images: s.Images}
	}
	in := &guaranteeInput{}
	data, err := in.celData(p)
	if err != nil {
		return "", err
	}
	kind := `"` + kindContainer + `"`
	if init {
		kind = celInitKind
	}
	expr := sidecarOKExpr(kind)
	for _, m := range []string{mKindsImages, mImagePrefixes} {
		expr = strings.ReplaceAll(expr, m, data[m])
	}
	return expr, nil
}

// SidecarNames is the CEL list of sidecars' names.
func SidecarNames(sidecars map[string]Sidecar) string {
	names := sortedKeys(sidecars)
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}
