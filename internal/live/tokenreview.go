package live

import (
	"context"
	"fmt"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TokenReview is the API server's answer to whether a token
// authenticates: the user it stands for and the audiences it is valid
// for, of those asked.
type TokenReview struct {
	Authenticated bool
	Audiences     []string
	Username      string
	Extra         map[string][]string
	Error         string
}

// ReviewToken asks the API server to authenticate token for audience (a
// TokenReview, which graft serve's ServiceAccount may create with the
// system:auth-delegator role). It is the one write graft makes, and it
// stores nothing.
func (cl *Cluster) ReviewToken(ctx context.Context, token, audience string) (TokenReview, error) {
	tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token, Audiences: []string{audience}}}
	got, err := cl.client.AuthenticationV1().TokenReviews().Create(ctx, tr, metav1.CreateOptions{})
	if err != nil {
		return TokenReview{}, fmt.Errorf("TokenReview: %w", err)
	}
	r := TokenReview{
		Authenticated: got.Status.Authenticated,
		Audiences:     got.Status.Audiences,
		Username:      got.Status.User.Username,
		Error:         got.Status.Error,
	}
	if len(got.Status.User.Extra) > 0 {
		r.Extra = make(map[string][]string, len(got.Status.User.Extra))
		for k, v := range got.Status.User.Extra {
			r.Extra[k] = []string(v)
		}
	}
	return r, nil
}
