package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/graftdev/graft/internal/proc"
	"github.com/graftdev/graft/webhook/certgen"
)

// Replica ports, as the Deployment's container ports.
const (
	ReplicaPort      = 8443
	replicaAdminPort = 8080
)

// ReplicaSet runs graft replicas the way the shipped Deployment does, one
// per network namespace, all serving one certificate issued by `graft
// certs` for the Service's names.
type ReplicaSet struct {
	bin, dir string
	args     []string // after serve and the address, certificate flags
	net      *Network
	CA       []byte
}

// NewReplicaSet issues the certificate into dir. args are added to every
// replica's `graft serve` (--config, --templates-dir, ...).
func NewReplicaSet(bin, dir string, network *Network, args ...string) (*ReplicaSet, error) {
	certDir := filepath.Join(dir, "replica-certs")
	ca, err := graftCerts(bin, certDir)
	if err != nil {
		return nil, err
	}
	return &ReplicaSet{
		bin: bin, dir: dir, net: network, CA: ca,
		args: append([]string{
			"--tls-cert=" + filepath.Join(certDir, certgen.CertFile),
			"--tls-key=" + filepath.Join(certDir, certgen.KeyFile),
		}, args...),
	}, nil
}

// Replica is one running graft in its own namespace.
type Replica struct {
	Name     string
	NS       *Netns
	AdminURL string // http://ip:8080
	proc     *proc.Process
	set      *ReplicaSet
}

// Start runs a replica named name in a new namespace and waits until its
// /readyz answers 200, as a kubelet's readiness probe would.
func (rs *ReplicaSet) Start(ctx context.Context, name string) (*Replica, error) {
	ns, err := rs.net.Add(ctx)
	if err != nil {
		return nil, err
	}
	ip := ns.IP.String()
	bin, args := ns.Exec(rs.bin, append([]string{"serve",
		"--addr=" + net.JoinHostPort(ip, fmt.Sprint(ReplicaPort)),
		"--admin-addr=" + net.JoinHostPort(ip, fmt.Sprint(replicaAdminPort)),
	}, rs.args...)...)
	p, err := proc.Start(proc.Spec{Name: name, Dir: rs.dir, Bin: bin, Args: args})
	if err != nil {
		return nil, errors.Join(err, rs.net.Remove(ns))
	}
	r := &Replica{Name: name, NS: ns, AdminURL: "http://" + net.JoinHostPort(ip, fmt.Sprint(replicaAdminPort)), proc: p, set: rs}
	hc := loopbackHTTPClient(nil, 2*time.Second)
	defer hc.CloseIdleConnections()
	if err := proc.Poll(ctx, p, 50*time.Millisecond, func(ctx context.Context) error {
		return proc.GetOK(ctx, hc, r.AdminURL+"/readyz")
	}); err != nil {
		return r, fmt.Errorf("%s: %w (log: %s)", name, err, p.LogPath())
	}
	return r, nil
}

// Signal sends sig to the replica's graft.
func (r *Replica) Signal(sig syscall.Signal) error {
	if err := syscall.Kill(r.proc.Pid(), sig); err != nil {
		return fmt.Errorf("%s: %v: %w", r.Name, sig, err)
	}
	return nil
}

// Wait waits for the replica to exit and returns how it exited.
func (r *Replica) Wait(ctx context.Context) error {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if done, err := r.proc.Exited(); done {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s still running: %w", r.Name, ctx.Err())
		case <-t.C:
		}
	}
}

// Close kills the replica if it runs and removes its namespace.
func (r *Replica) Close() error {
	if r.proc.Running() {
		_ = r.Signal(syscall.SIGKILL)
		_ = r.Wait(context.Background())
	}
	return r.set.net.Remove(r.NS)
}

// Log returns the end of the replica's log.
func (r *Replica) Log(max int64) string { return r.proc.Tail(max) }

// Pid is the replica's process id (ip netns exec execs graft, so it is
// graft's).
func (r *Replica) Pid() int { return r.proc.Pid() }

// LogPath is the replica's log file.
func (r *Replica) LogPath() string { return r.proc.LogPath() }

// Endpoints plays the endpoints controller for a selector-less Service:
// one EndpointSlice (label kubernetes.io/service-name, port named as the
// Service's) whose endpoints the caller adds, marks and removes as the
// controller would for Pods that start, terminate and go.
type Endpoints struct {
	client kubernetes.Interface
	mu     sync.Mutex
	slice  *discoveryv1.EndpointSlice
}

// EndpointState is what the endpoints controller says of a Pod's address.
type EndpointState int

const (
	// EndpointReady: running and passing its readiness probe.
	EndpointReady EndpointState = iota
	// EndpointTerminating: deleted, still serving while it drains.
	EndpointTerminating
	// EndpointNotReady: failing its readiness probe (or dead).
	EndpointNotReady
)

// CreateService creates svc without its selector, so that its endpoints
// are the caller's, and an empty EndpointSlice for its port portName,
// served on targetPort.
func CreateService(ctx context.Context, client kubernetes.Interface, svc *corev1.Service, portName string, targetPort int32) (*Endpoints, error) {
	svc = svc.DeepCopy()
	svc.ResourceVersion, svc.Spec.Selector = "", nil
	if _, err := client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("service %s: %w", svc.Name, err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: svc.Name + "-e2e", Namespace: svc.Namespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{
			Name: &portName, Port: &targetPort, Protocol: ptr(corev1.ProtocolTCP),
		}},
	}
	got, err := client.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, slice, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("endpointslice %s: %w", slice.Name, err)
	}
	return &Endpoints{client: client, slice: got}, nil
}

// Set adds r's address in state st, or changes it to st.
func (e *Endpoints) Set(ctx context.Context, r *Replica, st EndpointState) error {
	ep := discoveryv1.Endpoint{
		Addresses:  []string{r.NS.IP.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr(st == EndpointReady), Serving: ptr(st != EndpointNotReady), Terminating: ptr(st == EndpointTerminating)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: e.slice.Namespace, Name: r.Name},
	}
	return e.update(ctx, func(eps []discoveryv1.Endpoint) []discoveryv1.Endpoint {
		if i := e.index(eps, r); i >= 0 {
			eps[i] = ep
			return eps
		}
		return append(eps, ep)
	})
}

// Remove takes r's address out.
func (e *Endpoints) Remove(ctx context.Context, r *Replica) error {
	return e.update(ctx, func(eps []discoveryv1.Endpoint) []discoveryv1.Endpoint {
		if i := e.index(eps, r); i >= 0 {
			return slices.Delete(eps, i, i+1)
		}
		return eps
	})
}

func (e *Endpoints) index(eps []discoveryv1.Endpoint, r *Replica) int {
	return slices.IndexFunc(eps, func(ep discoveryv1.Endpoint) bool { return ep.Addresses[0] == r.NS.IP.String() })
}

func (e *Endpoints) update(ctx context.Context, change func([]discoveryv1.Endpoint) []discoveryv1.Endpoint) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.slice.DeepCopy()
	s.Endpoints = change(s.Endpoints)
	got, err := e.client.DiscoveryV1().EndpointSlices(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("endpointslice %s: %w", s.Name, err)
	}
	e.slice = got
	return nil
}

func ptr[T any](v T) *T { return &v }
