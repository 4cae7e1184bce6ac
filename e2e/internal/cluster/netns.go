package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
)

// Network gives each server its own network namespace and address, the
// way Pods get theirs: a veth pair per namespace, its inner end on a /24
// shared with the root namespace (where kube-apiserver runs), its outer end
// carrying the root side's address and a /32 route to the inner one. No
// bridge and no forwarding: the root namespace reaches every address
// directly, and deleting a namespace removes its veth pair and route.
//
// Names and the subnet derive from the process id, so concurrent runs on
// one machine do not meet, and namespaces left by a run that was killed
// (its process gone) are deleted by the next. It needs root and ip(8).
type Network struct {
	pid    int
	subnet netip.Prefix // 10.a.b.0/24
	host   netip.Addr   // 10.a.b.1, the root side of every pair

	mu     sync.Mutex
	next   int
	spaces map[string]*Netns
}

// Netns is one network namespace and its address.
type Netns struct {
	Name   string
	IP     netip.Addr
	hostIf string
}

// nsPrefix starts the name of every namespace a Network creates; the
// creating process's id follows it.
const nsPrefix = "graft-e2e-"

// NewNetwork checks that namespaces can be made here, removes those left
// by dead runs, and picks a /24 no route on this machine uses.
func NewNetwork(ctx context.Context) (*Network, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("network namespaces need ip(8): %w", err)
	}
	if err := removeStale(ctx); err != nil {
		return nil, err
	}
	routes, err := ipCmd(ctx, "-4", "route", "show", "table", "all")
	if err != nil {
		return nil, err
	}
	pid := os.Getpid()
	for i := range 64 {
		// 10.200.0.0 to 10.249.255.0, starting from the process id.
		n := (pid + i) % (50 * 256)
		subnet := netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(200 + n/256), byte(n % 256), 0}), 24)
		if strings.Contains(routes, subnetText(subnet)) {
			continue
		}
		host := subnet.Addr().Next()
		return &Network{pid: pid, subnet: subnet, host: host, spaces: map[string]*Netns{}}, nil
	}
	return nil, errors.New("no free /24 in 10.200.0.0/10 for the network namespaces")
}

// subnetText is how ip(8) prints addresses of subnet, up to the last dot.
func subnetText(subnet netip.Prefix) string {
	s := subnet.Addr().String()
	return s[:strings.LastIndex(s, ".")+1]
}

// removeStale deletes namespaces whose creating process is gone.
func removeStale(ctx context.Context) error {
	out, err := ipCmd(ctx, "netns", "list")
	if err != nil {
		return err
	}
	var errs []error
	for _, line := range strings.Split(out, "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, nsPrefix)
		if !ok {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil {
			continue
		}
		if _, err := os.Stat("/proc/" + pidText); err == nil && pid != os.Getpid() {
			continue // its run is still going
		}
		if _, err := ipCmd(ctx, "netns", "delete", name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Add creates a namespace with the next address of the subnet.
func (n *Network) Add(ctx context.Context) (*Netns, error) {
	n.mu.Lock()
	n.next++
	i := n.next
	n.mu.Unlock()
	if i > 250 {
		return nil, errors.New("network: out of addresses")
	}
	b := n.subnet.Addr().As4()
	b[3] = byte(i + 1)
	ns := &Netns{
		Name:   fmt.Sprintf("%s%d-%d", nsPrefix, n.pid, i),
		IP:     netip.AddrFrom4(b),
		hostIf: fmt.Sprintf("ge%d-%d", n.pid, i),
	}
	steps := [][]string{
		{"netns", "add", ns.Name},
		{"link", "add", ns.hostIf, "type", "veth", "peer", "name", "eth0", "netns", ns.Name},
		{"addr", "add", n.host.String() + "/32", "dev", ns.hostIf},
		{"link", "set", ns.hostIf, "up"},
		{"route", "add", ns.IP.String() + "/32", "dev", ns.hostIf},
		{"-n", ns.Name, "addr", "add", netip.PrefixFrom(ns.IP, 24).String(), "dev", "eth0"},
		{"-n", ns.Name, "link", "set", "eth0", "up"},
		{"-n", ns.Name, "link", "set", "lo", "up"},
	}
	n.mu.Lock()
	n.spaces[ns.Name] = ns
	n.mu.Unlock()
	for _, args := range steps {
		if _, err := ipCmd(ctx, args...); err != nil {
			return nil, errors.Join(err, n.Remove(ns))
		}
	}
	return ns, nil
}

// Remove deletes ns, and with it its veth pair and route.
func (n *Network) Remove(ns *Netns) error {
	n.mu.Lock()
	_, ok := n.spaces[ns.Name]
	delete(n.spaces, ns.Name)
	n.mu.Unlock()
	if !ok {
		return nil // removed already
	}
	// Not the caller's context: cleanup must run when the test's is done.
	_, err := ipCmd(context.Background(), "netns", "delete", ns.Name)
	return err
}

// Close deletes every namespace n created.
func (n *Network) Close() error {
	n.mu.Lock()
	spaces := make([]*Netns, 0, len(n.spaces))
	for _, ns := range n.spaces {
		spaces = append(spaces, ns)
	}
	n.mu.Unlock()
	var errs []error
	for _, ns := range spaces {
		errs = append(errs, n.Remove(ns))
	}
	return errors.Join(errs...)
}

// Exec is the command line that runs bin with args inside ns.
func (ns *Netns) Exec(bin string, args ...string) (string, []string) {
	return "ip", append([]string{"netns", "exec", ns.Name, bin}, args...)
}

func ipCmd(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}
