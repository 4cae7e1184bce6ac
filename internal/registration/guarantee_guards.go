package registration

import (
	"slices"

	"github.com/graftdev/graft/inject"
)

// locked reports whether profile p locks parameter param of template
// tmpl, as the engine reads lockedParams: "<template>.<param>", or
// "*.<param>" for every template.
func locked(p *inject.Profile, tmpl, param string) bool {
	return slices.Contains(p.LockedParams, tmpl+"."+param) || slices.Contains(p.LockedParams, "*."+param)
}
