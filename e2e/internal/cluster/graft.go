package cluster

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/graftdev/graft/internal/proc"
	"github.com/graftdev/graft/webhook/certgen"
)

// graftServer is the real graft binary serving on loopback: the webhook on
// Addr (TLS, certificate for 127.0.0.1 signed by CA) and metrics and health
// on AdminAddr (plain HTTP).
type graftServer struct {
	name       string // the process's name, and its log's
	bin, dir   string
	args       []string
	env        []string
	proc       *proc.Process
	Addr       string
	AdminAddr  string
	CA         []byte
	configPath string
}

func newGraft(bin, dir string, config []byte) (*graftServer, error) {
	return newNamedGraft("graft", bin, dir, config)
}

// newNamedGraft is newGraft for a graft called name, whose certificates
// and configuration are named after it.
func newNamedGraft(name, bin, dir string, config []byte) (*graftServer, error) {
	certDir := filepath.Join(dir, name+"-certs")
	ca, err := graftCerts(bin, certDir)
	if err != nil {
		return nil, err
	}
	addrs, err := proc.FreeAddrs(2)
	if err != nil {
		return nil, err
	}
	g := &graftServer{name: name, bin: bin, dir: dir, CA: ca, Addr: addrs[0].String(), AdminAddr: addrs[1].String()}
	g.args = []string{"serve",
		"--addr=" + g.Addr,
		"--admin-addr=" + g.AdminAddr,
		"--tls-cert=" + filepath.Join(certDir, certgen.CertFile),
		"--tls-key=" + filepath.Join(certDir, certgen.KeyFile),
		// One graft behind a url: reference has no endpoints to leave;
		// TestRollingReplicas is the drain's test.
		"--drain-delay=100ms",
	}
	if config != nil {
		g.configPath = filepath.Join(dir, name+"-config.yaml")
		if err := os.WriteFile(g.configPath, config, 0o600); err != nil {
			return nil, fmt.Errorf("graft config: %w", err)
		}
		g.args = append(g.args, "--config="+g.configPath)
	}
	return g, nil
}

// graftCerts writes a CA and a serving certificate for 127.0.0.1 into dir
// the way users make them, with `graft certs`, and returns the CA.
func graftCerts(bin, dir string) ([]byte, error) {
	out, err := exec.Command(bin, "certs", "--out", dir, "--ip", "127.0.0.1", "--dns", "localhost").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("graft certs: %w\n%s", err, out)
	}
	ca, err := os.ReadFile(filepath.Join(dir, certgen.CAFile))
	if err != nil {
		return nil, fmt.Errorf("graft certs: %w", err)
	}
	return ca, nil
}

// start runs graft and waits until it is ready on both ports.
func (g *graftServer) start(ctx context.Context) error {
	if g.proc != nil && g.proc.Running() {
		return fmt.Errorf("graft is already running")
	}
	p, err := proc.Start(proc.Spec{Name: g.name, Dir: g.dir, Bin: g.bin, Args: g.args, Env: g.env})
	if err != nil {
		return err
	}
	g.proc = p
	admin := loopbackHTTPClient(nil, 2*time.Second)
	tlsc := loopbackHTTPClient(g.CA, 2*time.Second)
	// graft bounds connections per client address; loopback is one.
	defer admin.CloseIdleConnections()
	defer tlsc.CloseIdleConnections()
	err = proc.Poll(ctx, p, 100*time.Millisecond, func(ctx context.Context) error {
		if err := proc.GetOK(ctx, admin, "http://"+g.AdminAddr+"/readyz"); err != nil {
			return err
		}
		// The webhook port must serve TLS with the certificate the API
		// server will be told to trust.
		return proc.GetOK(ctx, tlsc, "https://"+g.Addr+"/healthz")
	})
	if err != nil {
		return fmt.Errorf("graft: %w", err)
	}
	return nil
}

func (g *graftServer) stop() error {
	if g.proc == nil {
		return nil
	}
	// More than graft's own drain grace, so a clean shutdown is never cut short.
	return g.proc.Stop(30 * time.Second)
}

// GraftConfigPath is the file graft serves with (--config), which it
// reloads when it changes; empty when graft runs without one.
func (c *Cluster) GraftConfigPath() string { return c.graft.configPath }

// GraftLog returns graft's log so far (at most max bytes from its end).
func (c *Cluster) GraftLog(max int64) string {
	if c.graft == nil || c.graft.proc == nil {
		return ""
	}
	return c.graft.proc.Tail(max)
}

// Graft is a graft serve of a test's own beside the cluster's, configured
// once its address is known: NewGraft picks its ports and certificate,
// Start runs it.
type Graft struct{ g *graftServer }

// NewGraft makes a graft called name (its log is <name>.log in the run's
// directory) with ports and a certificate of its own. Nothing runs yet.
func (c *Cluster) NewGraft(name string) (*Graft, error) {
	g, err := newNamedGraft(name, c.opts.Graft, c.opts.Dir, nil)
	if err != nil {
		return nil, err
	}
	return &Graft{g: g}, nil
}

// Addr is its webhook address (host:port, TLS); AdminAddr its metrics and
// health address; CA the PEM CA of its certificate.
func (g *Graft) Addr() string      { return g.g.Addr }
func (g *Graft) AdminAddr() string { return g.g.AdminAddr }
func (g *Graft) CA() []byte        { return g.g.CA }

// Start runs it with config (its --config) and env added to its
// environment, and waits until it is ready.
func (g *Graft) Start(ctx context.Context, config []byte, env ...string) error {
	g.g.configPath = filepath.Join(g.g.dir, g.g.name+"-config.yaml")
	if err := os.WriteFile(g.g.configPath, config, 0o600); err != nil {
		return fmt.Errorf("%s config: %w", g.g.name, err)
	}
	g.g.args = append(g.g.args, "--config="+g.g.configPath)
	g.g.env = env
	return g.g.start(ctx)
}

// Stop stops it (SIGTERM, then kill after a grace period).
func (g *Graft) Stop() error { return g.g.stop() }

// Log returns the end of its log.
func (g *Graft) Log(max int64) string {
	if g.g.proc == nil {
		return ""
	}
	return g.g.proc.Tail(max)
}
