package harness

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/graftdev/graft/bench/internal/benchtls"
	"github.com/graftdev/graft/internal/proc"
)

// Peer is a server binary to measure. It is started as
// Bin Args... --addr A --admin-addr B --tls-cert C --tls-key D ExtraArgs...
// and must serve POST /inject over TLS on A and GET /readyz and /metrics
// (with go_memstats_mallocs_total) over plain HTTP on B.
type Peer struct {
	Name      string
	Bin       string
	Args      []string
	ExtraArgs []string
}

// process is a started peer.
type process struct {
	*proc.Process
	peer      Peer
	addr      string // host:port serving HTTPS
	adminURL  string // http://host:port
	httpAdmin *http.Client
}

// startPeer starts p on free loopback ports, with GOMAXPROCS=1 and, when
// pin is set, bound to CPU 0, and waits until /readyz answers 200.
func startPeer(ctx context.Context, p Peer, files benchtls.Files, pin bool, logDir string) (*process, error) {
	addrs, err := proc.FreeAddrs(2)
	if err != nil {
		return nil, err
	}
	addr, admin := addrs[0].String(), addrs[1].String()
	args := append(append([]string{}, p.Args...), "--addr", addr, "--admin-addr", admin, "--tls-cert", files.Cert, "--tls-key", files.Key)
	spec := proc.Spec{
		Name: p.Name, Dir: logDir, Bin: p.Bin,
		Args: append(args, p.ExtraArgs...),
		Env:  []string{"GOMAXPROCS=1"},
		// The work directory outlives a run; its logs are the last run's.
		Truncate: true,
	}
	if pin {
		spec.CPUs = "0"
	}
	child, err := proc.Start(spec)
	if err != nil {
		return nil, err
	}
	pr := &process{
		Process: child, peer: p, addr: addr, adminURL: "http://" + admin,
		httpAdmin: &http.Client{Timeout: 5 * time.Second},
	}
	ready, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = proc.Poll(ready, child, 50*time.Millisecond, func(ctx context.Context) error {
		return proc.GetOK(ctx, pr.httpAdmin, pr.adminURL+"/readyz")
	})
	if err != nil {
		_ = pr.stop()
		return nil, fmt.Errorf("%s: %w (log: %s)", p.Name, err, child.LogPath())
	}
	return pr, nil
}

// stop sends SIGTERM, then kills the process if it has not exited in 5s.
func (pr *process) stop() error { return pr.Stop(5 * time.Second) }
