package cluster

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/export"
)

// CreatePolicies creates the objects `graft export` writes, as
// `kubectl apply` of its output would.
func (c *Cluster) CreatePolicies(ctx context.Context, p *export.Policies) error {
	ar := c.Client.AdmissionregistrationV1()
	if _, err := ar.MutatingAdmissionPolicies().Create(ctx, p.Mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("MutatingAdmissionPolicy %s: %w", p.Mutating.Name, err)
	}
	if _, err := ar.MutatingAdmissionPolicyBindings().Create(ctx, p.MutatingBinding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("MutatingAdmissionPolicyBinding %s: %w", p.MutatingBinding.Name, err)
	}
	for i, v := range p.Validating {
		if _, err := ar.ValidatingAdmissionPolicies().Create(ctx, v, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("ValidatingAdmissionPolicy %s: %w", v.Name, err)
		}
		if _, err := ar.ValidatingAdmissionPolicyBindings().Create(ctx, p.Bindings[i], metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("ValidatingAdmissionPolicyBinding %s: %w", p.Bindings[i].Name, err)
		}
	}
	return nil
}

// DeletePolicies deletes what CreatePolicies created, as `kubectl delete`
// of graft export's output would; objects already gone are no error.
func (c *Cluster) DeletePolicies(ctx context.Context, p *export.Policies) error {
	ar := c.Client.AdmissionregistrationV1()
	errs := []error{
		ignoreNotFound(ar.MutatingAdmissionPolicyBindings().Delete(ctx, p.MutatingBinding.Name, metav1.DeleteOptions{})),
		ignoreNotFound(ar.MutatingAdmissionPolicies().Delete(ctx, p.Mutating.Name, metav1.DeleteOptions{})),
	}
	for i, v := range p.Validating {
		errs = append(errs,
			ignoreNotFound(ar.ValidatingAdmissionPolicyBindings().Delete(ctx, p.Bindings[i].Name, metav1.DeleteOptions{})),
			ignoreNotFound(ar.ValidatingAdmissionPolicies().Delete(ctx, v.Name, metav1.DeleteOptions{})))
	}
	return errors.Join(errs...)
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// SelectNamespaces points every binding of p at the namespaces sel
// selects, in place of the profile's graft.dev/inject label.
func SelectNamespaces(p *export.Policies, sel *metav1.LabelSelector) {
	p.MutatingBinding.Spec.MatchResources.NamespaceSelector = sel
	for _, b := range p.Bindings {
		b.Spec.MatchResources.NamespaceSelector = sel
	}
}
