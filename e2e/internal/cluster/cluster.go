// Package cluster runs a throwaway cluster on loopback for the
// end-to-end suite, the demo and the load tests: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok's simulated nodes and the
// real graft binary, each a child process with its own log file in the
// run's directory.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/graftdev/graft/internal/proc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options say which binaries to run and where to keep their state.
type Options struct {
	Etcd                  string // path to etcd
	KubeAPIServer         string // path to kube-apiserver
	KubeControllerManager string // path to kube-controller-manager
	KubeScheduler         string // path to kube-scheduler
	Kwok                  string // path to kwok
	KwokStages            string // path to kwok's stage files (one YAML stream)
	Graft                 string // path to graft
	// Dir holds data dirs, certificates and logs. The caller owns it.
	Dir string
	// GraftConfig, if set, is written to a file and passed with --config.
	GraftConfig []byte
	// Nodes is how many simulated nodes kwok runs. With none, neither
	// kube-scheduler nor kwok runs and Pods stay Pending: a load test of
	// Pod admission alone sets 0, so that nothing but the creates loads
	// the API server.
	Nodes int
	// ControllerManagerArgs and SchedulerArgs are added to those
	// components' flags (a fleet-sized load raises their client QPS, say).
	ControllerManagerArgs, SchedulerArgs []string
	// RealNodes, if set, adds nodes that run Pods for real (package
	// node): it is called once the control plane is up, with
	// kube-scheduler running even when Nodes is 0, and before graft
	// starts. Stop closes what it returns first; its LogFiles join the
	// cluster's.
	RealNodes func(ctx context.Context, c *Cluster) (NodeSet, error)
	// KeepLogs keeps a load-test command's directory (all but etcd's
	// data) when it succeeds too, to read why the API server refused
	// what it did (GRAFT_E2E_KEEP_LOGS=1).
	KeepLogs bool
	// APIOnly runs etcd and kube-apiserver alone, no controllers and no
	// nodes (GRAFT_E2E_API_ONLY=1): what admission needs, for a version
	// whose other components are not built (make e2e-matrix). The
	// harness then makes each namespace's default ServiceAccount itself,
	// as the controller manager would.
	APIOnly bool
}

// NodeSet is what Options.RealNodes started.
type NodeSet interface {
	Close() error
	LogFiles() []string
}

// DefaultNodes is how many simulated nodes run unless GRAFT_E2E_NODES
// says otherwise.
const DefaultNodes = 3

// OptionsFromEnv reads the binaries' paths from GRAFT_E2E_ETCD,
// GRAFT_E2E_KUBE_APISERVER, GRAFT_E2E_KUBE_CONTROLLER_MANAGER,
// GRAFT_E2E_KUBE_SCHEDULER, GRAFT_E2E_KWOK, GRAFT_E2E_KWOK_STAGES and
// GRAFT_E2E_GRAFT, and the number of nodes from GRAFT_E2E_NODES, as
// `make e2e` sets them; GRAFT_E2E_KEEP_LOGS, if set, sets KeepLogs.
// GRAFT_E2E_API_ONLY=1 sets APIOnly, with no nodes, and then only etcd,
// kube-apiserver and graft are needed.
func OptionsFromEnv() (Options, error) {
	o := Options{
		Etcd:                  os.Getenv("GRAFT_E2E_ETCD"),
		KubeAPIServer:         os.Getenv("GRAFT_E2E_KUBE_APISERVER"),
		KubeControllerManager: os.Getenv("GRAFT_E2E_KUBE_CONTROLLER_MANAGER"),
		KubeScheduler:         os.Getenv("GRAFT_E2E_KUBE_SCHEDULER"),
		Kwok:                  os.Getenv("GRAFT_E2E_KWOK"),
		KwokStages:            os.Getenv("GRAFT_E2E_KWOK_STAGES"),
		Graft:                 os.Getenv("GRAFT_E2E_GRAFT"),
		Nodes:                 DefaultNodes,
		KeepLogs:              os.Getenv("GRAFT_E2E_KEEP_LOGS") != "",
		APIOnly:               os.Getenv("GRAFT_E2E_API_ONLY") == "1",
	}
	needed := []struct{ env, path string }{
		{"GRAFT_E2E_ETCD", o.Etcd},
		{"GRAFT_E2E_KUBE_APISERVER", o.KubeAPIServer},
		{"GRAFT_E2E_GRAFT", o.Graft},
	}
	if o.APIOnly {
		o.Nodes = 0
	} else {
		needed = append(needed, []struct{ env, path string }{
			{"GRAFT_E2E_KUBE_CONTROLLER_MANAGER", o.KubeControllerManager},
			{"GRAFT_E2E_KUBE_SCHEDULER", o.KubeScheduler},
			{"GRAFT_E2E_KWOK", o.Kwok},
			{"GRAFT_E2E_KWOK_STAGES", o.KwokStages},
		}...)
	}
	var errs []error
	for _, b := range needed {
		if b.path == "" {
			errs = append(errs, fmt.Errorf("%s is not set", b.env))
			continue
		}
		if _, err := os.Stat(b.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.env, err))
		}
	}
	if v := os.Getenv("GRAFT_E2E_NODES"); v != "" && !o.APIOnly {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("GRAFT_E2E_NODES=%q: want a number of nodes, 0 or more", v))
		}
		o.Nodes = n
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("%w\nrun the suite with `make e2e`, which builds them and sets these", err)
	}
	return o, nil
}

// Cluster is a running control plane (etcd, kube-apiserver,
// kube-controller-manager and, with nodes, kube-scheduler and kwok's
// simulated nodes) and, when started by Start, graft.
type Cluster struct {
	opts        Options
	etcd        *proc.Process
	apiserver   *apiServer
	controllers *proc.Process
	scheduler   *proc.Process
	kwok        *proc.Process
	realNodes   NodeSet
	graft       *graftServer
	warnings    *warningLog

	// Config reaches the API server as a system:masters user.
	Config *rest.Config
	Client kubernetes.Interface
}

// Start brings the control plane and graft up in order and waits for each
// to be ready. On error the returned Cluster holds whatever started, so
// the caller can print its logs and must still call Stop.
func Start(ctx context.Context, o Options) (*Cluster, error) {
	c, err := StartControlPlane(ctx, o)
	if err != nil {
		return c, err
	}
	c.graft, err = newGraft(o.Graft, o.Dir, o.GraftConfig)
	if err != nil {
		return c, err
	}
	if err := c.graft.start(ctx); err != nil {
		return c, err
	}
	return c, nil
}

// StartControlPlane is Start without graft: etcd, kube-apiserver with
// apiserverArgs added to its flags, kube-controller-manager (unless
// o.APIOnly), and with o.Nodes simulated nodes kube-scheduler and kwok,
// for a test that runs graft its own way. It returns once every node is
// Ready.
func StartControlPlane(ctx context.Context, o Options, apiserverArgs ...string) (*Cluster, error) {
	c := &Cluster{opts: o}
	var (
		etcdURL string
		err     error
	)
	if c.warnings, err = openWarningLog(filepath.Join(o.Dir, warningLogName)); err != nil {
		return c, err
	}
	c.etcd, etcdURL, err = startEtcd(ctx, o.Etcd, o.Dir)
	if err != nil {
		return c, err
	}
	c.apiserver, err = startAPIServer(ctx, o.KubeAPIServer, o.Dir, etcdURL, apiserverArgs...)
	if err != nil {
		return c, err
	}
	c.Config = c.RESTConfig()
	c.Client, err = kubernetes.NewForConfig(c.Config)
	if err != nil {
		return c, fmt.Errorf("clientset: %w", err)
	}
	if o.APIOnly {
		return c, c.systemServiceAccounts(ctx)
	}
	if c.controllers, err = startControllerManager(ctx, o.KubeControllerManager, o.Dir, c.apiserver, c.Client, o.ControllerManagerArgs); err != nil {
		return c, err
	}
	if o.Nodes == 0 && o.RealNodes == nil {
		return c, nil
	}
	if c.scheduler, err = startScheduler(o.KubeScheduler, o.Dir, c.apiserver, o.SchedulerArgs); err != nil {
		return c, err
	}
	if o.Nodes > 0 {
		if c.kwok, err = startKwok(ctx, o.Kwok, o.KwokStages, o.Dir, c.apiserver); err != nil {
			return c, err
		}
		if err := addNodes(ctx, c.Client, c.kwok, o.Nodes); err != nil {
			return c, err
		}
	}
	if o.RealNodes != nil {
		if c.realNodes, err = o.RealNodes(ctx, c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// RESTConfig returns a fresh client configuration for the API server, so a
// caller may set its own warning handler or rate limits.
func (c *Cluster) RESTConfig() *rest.Config {
	return &rest.Config{
		Host:            c.apiserver.URL,
		BearerToken:     c.apiserver.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.apiserver.CA},
		// Loopback only: never a proxy from the environment.
		Proxy:   func(*http.Request) (*url.URL, error) { return nil, nil },
		QPS:     -1, // no client-side rate limit: the burst test measures the server
		Timeout: 60 * time.Second,
		// The API server's warnings (the suite's Pods draw hundreds) go
		// to a file in the run's directory, not the test output.
		WarningHandler: c.warnings,
	}
}

// ServerVersion is the version the API server reports on /version, such
// as v1.37.2: what results files name, never a constant.
func (c *Cluster) ServerVersion() (string, error) {
	v, err := c.Client.Discovery().ServerVersion()
	if err != nil {
		return "", fmt.Errorf("kube-apiserver /version: %w", err)
	}
	return v.GitVersion, nil
}

// APIOnly reports whether only etcd and kube-apiserver run: no
// controllers and no nodes (Options.APIOnly).
func (c *Cluster) APIOnly() bool { return c.opts.APIOnly }

// APIServerPID is the API server's process id.
func (c *Cluster) APIServerPID() int { return c.apiserver.proc.Pid() }

// APIServerURL is the API server's base URL.
func (c *Cluster) APIServerURL() string { return c.apiserver.URL }

// APIServerHTTP is an HTTP client and the bearer token for raw requests to
// the API server (its /metrics).
func (c *Cluster) APIServerHTTP() (*http.Client, string) {
	return loopbackHTTPClient(c.apiserver.CA, 30*time.Second), c.apiserver.Token
}

// GraftAddr is graft's webhook address (host:port, TLS).
func (c *Cluster) GraftAddr() string { return c.graft.Addr }

// GraftAdminAddr is graft's plain-HTTP metrics and health address.
func (c *Cluster) GraftAdminAddr() string { return c.graft.AdminAddr }

// GraftCA is the PEM CA the API server must trust to call graft.
func (c *Cluster) GraftCA() []byte { return c.graft.CA }

// StopGraft stops graft (SIGTERM, then kill after a grace period).
func (c *Cluster) StopGraft() error { return c.graft.stop() }

// StartGraft starts graft again on the same ports and certificates.
func (c *Cluster) StartGraft(ctx context.Context) error { return c.graft.start(ctx) }

// GraftRunning reports whether the graft process is alive.
func (c *Cluster) GraftRunning() bool {
	if c.graft == nil || c.graft.proc == nil {
		return false
	}
	return c.graft.proc.Running()
}

// Stop ends every process, graft first and etcd last, and reports any
// failure to stop.
func (c *Cluster) Stop() error {
	var errs []error
	if c.graft != nil {
		errs = append(errs, c.graft.stop())
	}
	if c.realNodes != nil {
		errs = append(errs, c.realNodes.Close())
	}
	for _, p := range []*proc.Process{c.kwok, c.scheduler, c.controllers, c.apiProc()} {
		if p != nil {
			errs = append(errs, p.Stop(15*time.Second))
		}
	}
	if c.etcd != nil {
		errs = append(errs, c.etcd.Stop(10*time.Second))
	}
	if c.warnings != nil {
		errs = append(errs, c.warnings.Close())
	}
	return errors.Join(errs...)
}

// processes are the running processes, in start order.
func (c *Cluster) processes() []*proc.Process {
	var out []*proc.Process
	for _, p := range []*proc.Process{c.etcd, c.apiProc(), c.controllers, c.scheduler, c.kwok, c.graftProc()} {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Logs returns the last max bytes of each process's log, headed by name.
func (c *Cluster) Logs(max int64) string {
	var b strings.Builder
	for _, p := range c.processes() {
		fmt.Fprintf(&b, "\n===== %s log (%s) =====\n%s\n", p.Name(), p.LogPath(), p.Tail(max))
	}
	return b.String()
}

// LogFiles lists each process's log file, and the file the API server's
// warnings to this harness's clients go to.
func (c *Cluster) LogFiles() []string {
	var out []string
	for _, p := range c.processes() {
		out = append(out, p.LogPath())
	}
	if c.realNodes != nil {
		out = append(out, c.realNodes.LogFiles()...)
	}
	if c.warnings != nil {
		out = append(out, c.warnings.path)
	}
	return out
}

func (c *Cluster) apiProc() *proc.Process {
	if c.apiserver == nil {
		return nil
	}
	return c.apiserver.proc
}

func (c *Cluster) graftProc() *proc.Process {
	if c.graft == nil {
		return nil
	}
	return c.graft.proc
}

// TempRoot is where a run's directory (Options.Dir) should go: tmpfs when
// there is one, since fsync there is free and etcd waits for fsync on every
// write (on a busy disk its requests time out), and nothing here needs to
// survive the run.
func TempRoot() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "graft-e2e-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return os.TempDir()
}

// WriteKubeconfig writes a kubeconfig reaching the API server as
// RESTConfig does, for the graft commands that read a cluster.
func (c *Cluster) WriteKubeconfig(path string) error {
	return c.apiserver.writeKubeconfig(path, adminUser)
}

// systemNamespaces are the namespaces kube-apiserver makes itself.
var systemNamespaces = []string{"default", "kube-system", "kube-public"}

// systemServiceAccounts gives the API server's own namespaces their
// default ServiceAccount once they exist, as the controller manager would
// (APIOnly), so Pods can be created there too.
func (c *Cluster) systemServiceAccounts(ctx context.Context) error {
	for _, ns := range systemNamespaces {
		err := proc.Poll(ctx, c.apiserver.proc, 100*time.Millisecond, func(ctx context.Context) error {
			_, err := c.Client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("namespace %s: %w", ns, err)
		}
		if err := c.WaitServiceAccount(ctx, ns); err != nil {
			return err
		}
	}
	return nil
}
