package cluster

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Served is graft as deploy/base deploys it, reached the way the API
// server reaches it there: replicas, each the real binary in its own
// network namespace, behind graft's Service, whose EndpointSlice this
// harness keeps as the endpoints controller would for their Pods; the
// shipped webhook registration as it is (service: references); and the
// shipped policy that refuses an uninjected Pod.
type Served struct {
	Network   *Network
	Set       *ReplicaSet
	Endpoints *Endpoints
	// Replicas are every replica started, running or not.
	Replicas []*Replica
	// Webhook is the shipped registration's first webhook's name, as the
	// API server's metrics label it.
	Webhook string
}

// ServeGraft serves graft as deploy/base ships it on c, which must have
// been started with --enable-aggregator-routing=true (without kube-proxy,
// the API server must dial an endpoint itself). It starts a replica for
// each of replicas and returns once each is Ready and in the
// EndpointSlice, and the registration and policy are created. args are
// added to every replica's `graft serve`. On error the caller must still
// Close what it returns.
func (c *Cluster) ServeGraft(ctx context.Context, shipped *Shipped, replicas []string, args ...string) (*Served, error) {
	s := &Served{}
	if shipped.Service == nil {
		return s, errors.New("deploy/base has no Service")
	}
	wh := shipped.Webhook.DeepCopy()
	ref := wh.Webhooks[0].ClientConfig.Service
	if ref == nil || ref.Name != shipped.Service.Name || ref.Namespace != shipped.Service.Namespace {
		return s, fmt.Errorf("the shipped webhook does not reference the shipped Service: %+v", ref)
	}
	portName := ""
	for _, p := range shipped.Service.Spec.Ports {
		if ref.Port != nil && p.Port == *ref.Port {
			portName = p.Name
		}
	}
	var err error
	if s.Network, err = NewNetwork(ctx); err != nil {
		return s, err
	}
	if s.Set, err = NewReplicaSet(c.opts.Graft, c.opts.Dir, s.Network, args...); err != nil {
		return s, err
	}
	if err := c.CreateNamespace(ctx, shipped.Namespace, nil); err != nil {
		return s, err
	}
	if s.Endpoints, err = CreateService(ctx, c.Client, shipped.Service, portName, ReplicaPort); err != nil {
		return s, err
	}
	for _, name := range replicas {
		if _, err := s.StartReplica(ctx, name); err != nil {
			return s, err
		}
	}
	wh.ResourceVersion = ""
	for i := range wh.Webhooks {
		wh.Webhooks[i].ClientConfig.CABundle = s.Set.CA
	}
	s.Webhook = wh.Webhooks[0].Name
	reg := c.Client.AdmissionregistrationV1()
	if _, err := reg.MutatingWebhookConfigurations().Create(ctx, wh, metav1.CreateOptions{}); err != nil {
		return s, fmt.Errorf("register webhook: %w", err)
	}
	policy, binding := shipped.Policy.DeepCopy(), shipped.Binding.DeepCopy()
	policy.ResourceVersion, binding.ResourceVersion = "", ""
	if _, err := reg.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		return s, fmt.Errorf("ValidatingAdmissionPolicy: %w", err)
	}
	if _, err := reg.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return s, fmt.Errorf("ValidatingAdmissionPolicyBinding: %w", err)
	}
	return s, nil
}

// StartReplica starts a replica named name and, once it is Ready, adds it
// to the EndpointSlice.
func (s *Served) StartReplica(ctx context.Context, name string) (*Replica, error) {
	r, err := s.Set.Start(ctx, name)
	if r != nil {
		s.Replicas = append(s.Replicas, r)
	}
	if err != nil {
		return r, err
	}
	return r, s.Endpoints.Set(ctx, r, EndpointReady)
}

// Close kills every replica still running and removes the network
// namespaces.
func (s *Served) Close() error {
	var errs []error
	for _, r := range s.Replicas {
		errs = append(errs, r.Close())
	}
	if s.Network != nil {
		errs = append(errs, s.Network.Close())
	}
	return errors.Join(errs...)
}
