package cluster

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/graftdev/graft/webhook/certgen"
)

// graftServer is the real graft binary serving on loopback: the webhook on
// Addr (TLS, certificate for 127.0.0.1 signed by CA) and metrics and health
// on AdminAddr (plain HTTP).
type graftServer struct {
	bin, dir   string
	args       []string
	proc       *proc
	Addr       string
	AdminAddr  string
	CA         []byte
	configPath string
}

func newGraft(bin, dir string, config []byte) (*graftServer, error) {
	certDir := filepath.Join(dir, "graft-certs")
	b, err := certgen.Generate(certgen.Options{
		DNSNames: []string{"localhost"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	if err != nil {
		return nil, fmt.Errorf("graft certificates: %w", err)
	}
	if err := b.Write(certDir); err != nil {
		return nil, fmt.Errorf("graft certificates: %w", err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	g := &graftServer{bin: bin, dir: dir, CA: b.CACert, Addr: hostPort(ports[0]), AdminAddr: hostPort(ports[1])}
	g.args = []string{"serve",
		"--addr=" + g.Addr,
		"--admin-addr=" + g.AdminAddr,
		"--tls-cert=" + filepath.Join(certDir, certgen.CertFile),
		"--tls-key=" + filepath.Join(certDir, certgen.KeyFile),
	}
	if config != nil {
		g.configPath = filepath.Join(dir, "graft-config.yaml")
		if err := os.WriteFile(g.configPath, config, 0o600); err != nil {
			return nil, fmt.Errorf("graft config: %w", err)
		}
		g.args = append(g.args, "--config="+g.configPath)
	}
	return g, nil
}

// start runs graft and waits until it is ready on both ports.
func (g *graftServer) start(ctx context.Context) error {
	if g.proc != nil {
		if ok, _ := g.proc.exited(); !ok {
			return fmt.Errorf("graft is already running")
		}
	}
	p, err := startProc("graft", g.dir, g.bin, g.args...)
	if err != nil {
		return err
	}
	g.proc = p
	admin := loopbackHTTPClient(nil, 2*time.Second)
	tlsc := loopbackHTTPClient(g.CA, 2*time.Second)
	err = poll(ctx, p, 100*time.Millisecond, func(ctx context.Context) error {
		if err := getOK(ctx, admin, "http://"+g.AdminAddr+"/readyz"); err != nil {
			return err
		}
		// The webhook port must serve TLS with the certificate the API
		// server will be told to trust.
		return getOK(ctx, tlsc, "https://"+g.Addr+"/healthz")
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
	return g.proc.stop(10 * time.Second)
}

func getOK(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	return nil
}

// GraftLog returns graft's log so far (at most max bytes from its end).
func (c *Cluster) GraftLog(max int64) string {
	if c.graft == nil || c.graft.proc == nil {
		return ""
	}
	return c.graft.proc.tail(max)
}
