package redirect_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"golang.org/x/sys/unix"

	"github.com/graftdev/graft/internal/redirect"
	"github.com/graftdev/graft/internal/redirect/redirecttest"
)

// Addresses of the two network namespaces the test makes, joined by a veth
// pair: they exist only inside them.
const (
	podIP  = "10.251.0.1"
	peerIP = "10.251.0.2"
)

const (
	proxyUID = 1337
	appUID   = 1000
)

// netnsPair makes a "pod" and a "peer" network namespace joined by a veth
// pair and returns their paths; they are deleted when the test ends.
func netnsPair(t *testing.T) (pod, peer string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: makes network namespaces and programs nftables in them")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2's ip to make network namespaces")
	}
	id := os.Getpid() % 100000
	podNS, peerNS := fmt.Sprintf("graft-rd-pod-%d", id), fmt.Sprintf("graft-rd-peer-%d", id)
	vethPod, vethPeer := fmt.Sprintf("grd%da", id), fmt.Sprintf("grd%db", id)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", podNS)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", podNS).Run() })
	run("netns", "add", peerNS)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", peerNS).Run() })
	run("link", "add", vethPod, "netns", podNS, "type", "veth", "peer", "name", vethPeer, "netns", peerNS)
	run("-n", podNS, "addr", "add", podIP+"/30", "dev", vethPod)
	run("-n", peerNS, "addr", "add", peerIP+"/30", "dev", vethPeer)
	for _, l := range [][2]string{{podNS, vethPod}, {podNS, "lo"}, {peerNS, vethPeer}, {peerNS, "lo"}} {
		run("-n", l[0], "link", "set", l[1], "up")
	}
	return "/var/run/netns/" + podNS, "/var/run/netns/" + peerNS
}

// inNS runs fn on an OS thread that has entered the namespace at path and,
// if fsuid is not negative, taken that filesystem uid: the owner the
// kernel records for the sockets fn creates (nftables' meta skuid). The
// thread is never handed back to the runtime.
func inNS[T any](t *testing.T, path string, fsuid int, fn func() (T, error)) T {
	t.Helper()
	v, err := runInNS(path, fsuid, fn)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func runInNS[T any](path string, fsuid int, fn func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // not unlocked: the thread exits with the goroutine
		ns, err := os.Open(path)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns: %w", err)}
			return
		}
		if fsuid >= 0 {
			unix.Setfsuid(fsuid)
		}
		v, err := fn()
		ch <- result{v, err}
	}()
	r := <-ch
	return r.v, r.err
}

// echo serves ln: it sends back what it reads.
func echo(t *testing.T, ln net.Listener) {
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
}

func listen(addr string) func() (net.Listener, error) {
	return func() (net.Listener, error) { return net.Listen("tcp4", addr) }
}

// exchange connects to addr from the namespace as uid, sends a line and
// wants it back.
func exchange(t *testing.T, ns string, uid int, addr string) {
	t.Helper()
	c := inNS(t, ns, uid, func() (net.Conn, error) { return net.DialTimeout("tcp4", addr, 10*time.Second) })
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := "ping " + addr
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil || string(got) != msg {
		t.Fatalf("to %s as uid %d: got %q, %v; want %q back", addr, uid, got, err, msg)
	}
}

// TestRedirectInNetworkNamespace programs a real network namespace with
// Apply and sends real connections through it: an app's outbound TCP goes
// through the proxy's outbound port to the server and back, inbound TCP
// through the inbound port; excluded ports, loopback and the proxy's own
// uid go direct.
func TestRedirectInNetworkNamespace(t *testing.T) {
	pod, peer := netnsPair(t)

	echo(t, inNS(t, peer, -1, listen(peerIP+":8080")))
	echo(t, inNS(t, peer, -1, listen(peerIP+":9090")))
	echo(t, inNS(t, pod, -1, listen("0.0.0.0:8080")))  // the app's port
	echo(t, inNS(t, pod, -1, listen("0.0.0.0:15021"))) // the proxy's health port

	proxy := &redirecttest.Proxy{Dial: func(network, addr string) (net.Conn, error) {
		return runInNS(pod, proxyUID, func() (net.Conn, error) { return net.DialTimeout(network, addr, 10*time.Second) })
	}}
	for name, addr := range map[string]string{"outbound": "0.0.0.0:15001", "inbound": "0.0.0.0:15006"} {
		ln := inNS(t, pod, -1, listen(addr))
		t.Cleanup(func() { ln.Close() })
		go func() { _ = proxy.Serve(name, ln) }()
	}

	rules := redirect.Rules{
		ProxyUID: proxyUID, OutboundPort: 15001, InboundPort: 15006,
		ExcludeOutboundPorts: []uint16{9090}, ExcludeInboundPorts: []uint16{15021},
	}
	// Twice: the second replaces the first.
	for range 2 {
		if err := redirect.ApplyNetNS(pod, rules); err != nil {
			t.Fatal(err)
		}
	}
	checkKernelRules(t, pod)

	for _, tc := range []struct {
		name     string
		from     string
		uid      int
		addr     string
		wantPass string // what the proxy passes; "" for a direct connection
	}{
		{"outbound through the proxy", pod, appUID, peerIP + ":8080", "outbound " + peerIP + ":8080"},
		{"outbound to an excluded port", pod, appUID, peerIP + ":9090", ""},
		{"outbound as the proxy's uid", pod, proxyUID, peerIP + ":8080", ""},
		{"outbound over loopback", pod, appUID, "127.0.0.1:8080", ""},
		{"inbound through the proxy", peer, 0, podIP + ":8080", "inbound " + podIP + ":8080"},
		{"inbound to an excluded port", peer, 0, podIP + ":15021", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(proxy.Passed())
			exchange(t, tc.from, tc.uid, tc.addr)
			var got []string
			for _, p := range proxy.Passed()[before:] {
				got = append(got, p.String())
			}
			var want []string
			if tc.wantPass != "" {
				want = []string{tc.wantPass}
			}
			if !slices.Equal(got, want) {
				t.Errorf("the proxy passed %q, want %q", got, want)
			}
		})
	}
}

// checkKernelRules reads the table back from the kernel: one copy of each
// chain's rules, however often Apply ran, and, where the nft command is
// installed, its own listing in the log.
func checkKernelRules(t *testing.T, ns string) {
	t.Helper()
	f, err := os.Open(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := nftables.New(nftables.WithNetNSFd(int(f.Fd())))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyIPv4)
	if err != nil {
		t.Fatal(err)
	}
	var table *nftables.Table
	for _, tb := range tables {
		if tb.Name == redirect.TableName {
			table = tb
		}
	}
	if table == nil {
		t.Fatalf("no table %s in the namespace", redirect.TableName)
	}
	// output: uid, loopback, one excluded port, the redirect; prerouting:
	// one excluded port, the redirect.
	for chain, want := range map[string]int{"output": 4, "prerouting": 2} {
		rules, err := c.GetRules(table, &nftables.Chain{Name: chain, Table: table})
		if err != nil {
			t.Fatal(err)
		}
		if len(rules) != want {
			t.Errorf("chain %s holds %d rules, want %d", chain, len(rules), want)
		}
	}
	if _, err := exec.LookPath("nft"); err == nil {
		out, err := exec.Command("ip", "netns", "exec", ns[strings.LastIndex(ns, "/")+1:], "nft", "list", "table", "ip", redirect.TableName).CombinedOutput()
		if err != nil {
			t.Fatalf("nft list: %v\n%s", err, out)
		}
		t.Logf("nft list table ip %s:\n%s", redirect.TableName, out)
	}
}
