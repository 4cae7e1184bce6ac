package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/graftdev/graft/internal/proc"
)

// startEtcd runs a single-member etcd on two free loopback ports with a
// fresh data dir under dir, and waits until it reports healthy.
func startEtcd(ctx context.Context, bin, dir string) (*proc.Process, string, error) {
	addrs, err := proc.FreeAddrs(2)
	if err != nil {
		return nil, "", err
	}
	client := "http://" + addrs[0].String()
	peer := "http://" + addrs[1].String()
	p, err := proc.Start(proc.Spec{Name: "etcd", Dir: dir, Bin: bin, Args: []string{
		"--name=e2e",
		"--data-dir=" + filepath.Join(dir, "etcd-data"),
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=e2e=" + peer,
		"--initial-cluster-state=new",
		"--logger=zap",
		"--log-level=warn",
		// Room for a fleet: 100,000 Pods and their history (the default
		// quota, 2 GiB, is the size etcd refuses writes beyond).
		"--quota-backend-bytes=8589934592",
	}})
	if err != nil {
		return nil, "", err
	}
	hc := loopbackHTTPClient(nil, 2*time.Second)
	err = proc.Poll(ctx, p, 100*time.Millisecond, func(ctx context.Context) error {
		body, err := proc.Get(ctx, hc, client+"/health", nil)
		if err != nil {
			return err
		}
		if !strings.Contains(string(body), `"true"`) {
			return fmt.Errorf("etcd /health: %s", body)
		}
		return nil
	})
	if err != nil {
		return p, client, fmt.Errorf("etcd: %w", err)
	}
	return p, client, nil
}
