// Package redirect programs a Pod's network namespace so that its TCP
// traffic passes through a local proxy: outbound connections to the
// proxy's outbound port, inbound ones to its inbound port, with nftables
// (through netlink: no iptables or nft binary is needed). The proxy reads
// each connection's original destination (SO_ORIGINAL_DST) and connects
// there itself; its own connections, made as its uid, are left alone.
//
// `graft proxy-init` (the mesh-proxy template's init container) and graft's
// CNI plugin both apply the same Rules.
package redirect

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// TableName is the nftables table Apply owns in the namespace. Apply
// replaces it whole, so applying twice (an init container restarted, a CNI
// ADD retried) leaves one copy of the rules.
const TableName = "graft_redirect"

// MaxExcludedPorts bounds each exclusion list, as the template bounds its
// parameters (32, plus the proxy's health port).
const MaxExcludedPorts = 64

// Rules say what to redirect where.
type Rules struct {
	// ProxyUID is the uid the proxy runs as: its connections go out
	// unredirected.
	ProxyUID uint32
	// OutboundPort and InboundPort are where the proxy listens for
	// redirected outbound and inbound connections.
	OutboundPort, InboundPort uint16
	// ExcludeOutboundPorts are destination ports of outbound connections
	// that bypass the proxy; ExcludeInboundPorts the Pod's own ports whose
	// inbound connections do (the proxy's health port among them).
	ExcludeOutboundPorts, ExcludeInboundPorts []uint16
}

// Validate refuses rules that would loop or cannot be programmed.
func (r Rules) Validate() error {
	var errs []error
	if r.OutboundPort == 0 || r.InboundPort == 0 {
		errs = append(errs, errors.New("outbound and inbound ports must be set"))
	}
	if r.OutboundPort == r.InboundPort {
		errs = append(errs, fmt.Errorf("outbound and inbound port are both %d", r.OutboundPort))
	}
	for _, l := range []struct {
		what  string
		ports []uint16
	}{{"outbound", r.ExcludeOutboundPorts}, {"inbound", r.ExcludeInboundPorts}} {
		if len(l.ports) > MaxExcludedPorts {
			errs = append(errs, fmt.Errorf("%d excluded %s ports, at most %d", len(l.ports), l.what, MaxExcludedPorts))
		}
		if slices.Contains(l.ports, 0) {
			errs = append(errs, fmt.Errorf("excluded %s port 0", l.what))
		}
	}
	return errors.Join(errs...)
}

// ParsePorts reads a comma-separated list of ports ("15021,8080"; empty
// for none), as the template's arguments and annotations write them.
// Duplicates are dropped; the result is sorted.
func ParsePorts(s string) ([]uint16, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	items := strings.Split(s, ",")
	if len(items) > MaxExcludedPorts {
		return nil, fmt.Errorf("%d ports, at most %d", len(items), MaxExcludedPorts)
	}
	var out []uint16
	for _, item := range items {
		p, err := ParsePort(strings.TrimSpace(item))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ParsePort reads one port, 1 to 65535.
func ParsePort(s string) (uint16, error) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("port %q: want 1 to 65535", s)
	}
	return uint16(n), nil
}

// Conn is what Apply needs of an nftables connection (*nftables.Conn):
// the calls queue messages, Flush sends them as one transaction.
type Conn interface {
	AddTable(*nftables.Table) *nftables.Table
	DelTable(*nftables.Table)
	AddChain(*nftables.Chain) *nftables.Chain
	AddRule(*nftables.Rule) *nftables.Rule
	Flush() error
}

// Apply replaces the namespace's TableName table with the rules, in one
// netlink transaction: the namespace has either its old rules or all of
// the new ones, never a part. Only IPv4 is redirected: IPv6 connections go
// out directly.
func Apply(c Conn, r Rules) error {
	if err := r.Validate(); err != nil {
		return fmt.Errorf("redirect rules: %w", err)
	}
	table := &nftables.Table{Name: TableName, Family: nftables.TableFamilyIPv4}
	// Adding an existing table is no error and deleting a missing one is:
	// add, then delete, then add again, all in the one transaction.
	c.AddTable(table)
	c.DelTable(table)
	c.AddTable(table)
	out := c.AddChain(&nftables.Chain{
		Name: "output", Table: table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityNATDest,
	})
	in := c.AddChain(&nftables.Chain{
		Name: "prerouting", Table: table, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPrerouting, Priority: nftables.ChainPriorityNATDest,
	})
	for _, exprs := range outboundRules(r) {
		c.AddRule(&nftables.Rule{Table: table, Chain: out, Exprs: exprs})
	}
	for _, exprs := range inboundRules(r) {
		c.AddRule(&nftables.Rule{Table: table, Chain: in, Exprs: exprs})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("program nftables table %s: %w", TableName, err)
	}
	return nil
}

// outboundRules, in order: the proxy's own connections, loopback and the
// excluded ports return untouched; every other TCP connection goes to the
// outbound port.
func outboundRules(r Rules) [][]expr.Any {
	rules := [][]expr.Any{
		// meta skuid <uid> return
		{
			&expr.Meta{Key: expr.MetaKeySKUID, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.NativeEndian.PutUint32(r.ProxyUID)},
			&expr.Verdict{Kind: expr.VerdictReturn},
		},
		// oifname "lo" return: 127.0.0.0/8 and the Pod's own addresses.
		{
			&expr.Meta{Key: expr.MetaKeyOIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname("lo")},
			&expr.Verdict{Kind: expr.VerdictReturn},
		},
	}
	for _, p := range r.ExcludeOutboundPorts {
		rules = append(rules, tcpDportReturn(p))
	}
	return append(rules, tcpRedirect(r.OutboundPort))
}

// inboundRules: the excluded ports return untouched; every other TCP
// connection goes to the inbound port.
func inboundRules(r Rules) [][]expr.Any {
	var rules [][]expr.Any
	for _, p := range r.ExcludeInboundPorts {
		rules = append(rules, tcpDportReturn(p))
	}
	return append(rules, tcpRedirect(r.InboundPort))
}

// tcpDportReturn is `tcp dport <port> return`.
func tcpDportReturn(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		// The destination port: bytes 2-3 of the TCP header.
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.Verdict{Kind: expr.VerdictReturn},
	}
}

// tcpRedirect is `meta l4proto tcp redirect to :<port>`.
func tcpRedirect(port uint16) []expr.Any {
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Immediate{Register: 1, Data: binaryutil.BigEndian.PutUint16(port)},
		&expr.Redir{RegisterProtoMin: 1},
	}
}

// ifname is an interface name as nftables compares it: NUL-padded to
// IFNAMSIZ.
func ifname(n string) []byte {
	b := make([]byte, unix.IFNAMSIZ)
	copy(b, n)
	return b
}
