package deploy

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// exprValues returns the values of sel's expression on key with op, or nil.
func exprValues(sel *metav1.LabelSelector, key string, op metav1.LabelSelectorOperator) []string {
	if sel == nil {
		return nil
	}
	for _, e := range sel.MatchExpressions {
		if e.Key == key && e.Operator == op {
			return e.Values
		}
	}
	return nil
}

// webhookRoute reads a webhook's name: <profile>.inject.graft.dev (rev
// empty) or <profile>.<rev>.rev.inject.graft.dev. Profile and revision
// names are DNS labels, without dots.
func webhookRoute(name string) (profile, rev string, ok bool) {
	if rest, isRev := strings.CutSuffix(name, ".rev.inject.graft.dev"); isRev {
		profile, rev, ok = strings.Cut(rest, ".")
		return profile, rev, ok && profile != "" && rev != "" && !strings.Contains(rev, ".")
	}
	profile, ok = strings.CutSuffix(name, ".inject.graft.dev")
	return profile, "", ok && profile != "" && !strings.Contains(profile, ".")
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// selects reports whether sel is valid, not empty, and matches set.
func selects(sel *metav1.LabelSelector, set map[string]string) bool {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return false
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && s.Matches(labels.Set(set))
}

// parseCA parses a PEM caBundle and checks it holds CA certificates only.
func parseCA(bundle []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := bundle; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		if !c.IsCA {
			return nil, errors.New("a certificate in the bundle is not a CA")
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no certificate")
	}
	return certs, nil
}

// ownDeployment: a Deployment of graft's own, not of a part that runs
// beside it (the audit exporter, the watchdog).
func ownDeployment(name string) bool {
	return !strings.HasSuffix(name, "-audit") && !strings.HasSuffix(name, "-watchdog")
}
