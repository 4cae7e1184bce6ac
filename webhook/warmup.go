package webhook

import (
	_ "embed"
	"fmt"

	"github.com/graftdev/graft/inject"
)

// warmupReview is a small Pod CREATE review. Admitting it once before
// reporting ready pays sonic's first-use cost (~170 ms) and the engine's
// first render outside of any API server request.
//
//go:embed warmup_review.json
var warmupReview []byte

// warmUp runs the sample review through the engine's default profile.
func warmUp(eng *inject.Engine) error {
	_, _, err := eng.Admit(nil, warmupReview, inject.Options{})
	if err != nil {
		return fmt.Errorf("warm-up admission: %w", err)
	}
	return nil
}
