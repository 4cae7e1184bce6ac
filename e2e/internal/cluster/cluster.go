// Package cluster runs a throwaway control plane on loopback for the
// end-to-end suite and the demo: etcd, kube-apiserver and the real graft
// binary, each a child process with its own log file.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/graftdev/graft/internal/proc"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Options say which binaries to run and where to keep their state.
type Options struct {
	Etcd          string // path to etcd
	KubeAPIServer string // path to kube-apiserver
	Graft         string // path to graft
	// Dir holds data dirs, certificates and logs. The caller owns it.
	Dir string
	// GraftConfig, if set, is written to a file and passed with --config.
	GraftConfig []byte
}

// OptionsFromEnv reads the binaries' paths from GRAFT_E2E_ETCD,
// GRAFT_E2E_KUBE_APISERVER and GRAFT_E2E_GRAFT, as `make e2e` sets them.
func OptionsFromEnv() (Options, error) {
	o := Options{
		Etcd:          os.Getenv("GRAFT_E2E_ETCD"),
		KubeAPIServer: os.Getenv("GRAFT_E2E_KUBE_APISERVER"),
		Graft:         os.Getenv("GRAFT_E2E_GRAFT"),
	}
	var errs []error
	for _, b := range []struct{ env, path string }{
		{"GRAFT_E2E_ETCD", o.Etcd},
		{"GRAFT_E2E_KUBE_APISERVER", o.KubeAPIServer},
		{"GRAFT_E2E_GRAFT", o.Graft},
	} {
		if b.path == "" {
			errs = append(errs, fmt.Errorf("%s is not set", b.env))
			continue
		}
		if _, err := os.Stat(b.path); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", b.env, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return o, fmt.Errorf("%w\nrun the suite with `make e2e`, which builds and installs them", err)
	}
	return o, nil
}

// Cluster is a running etcd + kube-apiserver + graft, with a stand-in for
// the one controller admission needs (each namespace's default
// ServiceAccount).
type Cluster struct {
	opts      Options
	etcd      *proc.Process
	apiserver *apiServer
	graft     *graftServer
	// accounts stands in for kube-controller-manager's ServiceAccount
	// controller (the API server's default admission plugins need it).
	accounts *serviceAccounts

	// Config reaches the API server as a system:masters user.
	Config *rest.Config
	Client kubernetes.Interface
}

// Start brings the three processes up in order and waits for each to be
// ready. On error the returned Cluster holds whatever started, so the
// caller can print its logs and must still call Stop.
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
// apiserverArgs added to its flags, and the ServiceAccount stand-in, for a
// test that runs graft its own way.
func StartControlPlane(ctx context.Context, o Options, apiserverArgs ...string) (*Cluster, error) {
	c := &Cluster{opts: o}
	var (
		etcdURL string
		err     error
	)
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
	if c.accounts, err = startServiceAccounts(ctx, c.Client); err != nil {
		return c, err
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
	}
}

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

// Stop ends every process, graft first, and reports any failure to stop.
func (c *Cluster) Stop() error {
	var errs []error
	if c.graft != nil {
		errs = append(errs, c.graft.stop())
	}
	if c.accounts != nil {
		c.accounts.shutdown()
	}
	if c.apiserver != nil && c.apiserver.proc != nil {
		errs = append(errs, c.apiserver.proc.Stop(15*time.Second))
	}
	if c.etcd != nil {
		errs = append(errs, c.etcd.Stop(10*time.Second))
	}
	return errors.Join(errs...)
}

// Logs returns the last max bytes of each process's log, headed by name.
func (c *Cluster) Logs(max int64) string {
	var b strings.Builder
	for _, p := range []*proc.Process{c.etcd, c.apiProc(), c.graftProc()} {
		if p == nil {
			continue
		}
		fmt.Fprintf(&b, "\n===== %s log (%s) =====\n%s\n", p.Name(), p.LogPath(), p.Tail(max))
	}
	return b.String()
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
	rc := c.RESTConfig()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["graft-e2e"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	cfg.AuthInfos["graft-e2e"] = &clientcmdapi.AuthInfo{Token: rc.BearerToken}
	cfg.Contexts["graft-e2e"] = &clientcmdapi.Context{Cluster: "graft-e2e", AuthInfo: "graft-e2e"}
	cfg.CurrentContext = "graft-e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return nil
}
