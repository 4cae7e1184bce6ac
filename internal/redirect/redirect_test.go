package redirect

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// fakeConn records what Apply queues, as the nft command would print it.
type fakeConn struct {
	ops      []string
	flushErr error
}

func (f *fakeConn) AddTable(t *nftables.Table) *nftables.Table {
	f.ops = append(f.ops, fmt.Sprintf("add table %s %s", family(t.Family), t.Name))
	return t
}

func (f *fakeConn) DelTable(t *nftables.Table) {
	f.ops = append(f.ops, fmt.Sprintf("delete table %s %s", family(t.Family), t.Name))
}

func (f *fakeConn) AddChain(c *nftables.Chain) *nftables.Chain {
	hook := map[nftables.ChainHook]string{*nftables.ChainHookOutput: "output", *nftables.ChainHookPrerouting: "prerouting"}[*c.Hooknum]
	f.ops = append(f.ops, fmt.Sprintf("add chain %s %s { type %s hook %s priority %d }", c.Table.Name, c.Name, c.Type, hook, *c.Priority))
	return c
}

func (f *fakeConn) AddRule(r *nftables.Rule) *nftables.Rule {
	f.ops = append(f.ops, fmt.Sprintf("add rule %s %s %s", r.Table.Name, r.Chain.Name, describe(r.Exprs)))
	return r
}

func (f *fakeConn) Flush() error {
	f.ops = append(f.ops, "commit")
	return f.flushErr
}

func family(f nftables.TableFamily) string {
	if f == nftables.TableFamilyIPv4 {
		return "ip"
	}
	return fmt.Sprint(f)
}

// describe decodes the expressions Apply builds back into nft's syntax,
// reading every byte the kernel will: a wrong byte order or register shows
// as a line that does not read as intended.
func describe(exprs []expr.Any) string {
	var words []string
	var loaded string // what register 1 holds
	for _, e := range exprs {
		switch e := e.(type) {
		case *expr.Meta:
			loaded = map[expr.MetaKey]string{expr.MetaKeySKUID: "skuid", expr.MetaKeyOIFNAME: "oifname", expr.MetaKeyL4PROTO: "l4proto"}[e.Key]
			if e.Register != 1 || loaded == "" {
				return fmt.Sprintf("bad meta %+v", e)
			}
		case *expr.Payload:
			if e.Base != expr.PayloadBaseTransportHeader || e.Offset != 2 || e.Len != 2 || e.DestRegister != 1 {
				return fmt.Sprintf("bad payload %+v", e)
			}
			loaded = "dport"
		case *expr.Cmp:
			if e.Op != expr.CmpOpEq || e.Register != 1 {
				return fmt.Sprintf("bad cmp %+v", e)
			}
			switch loaded {
			case "skuid":
				words = append(words, fmt.Sprintf("meta skuid %d", binaryutil.NativeEndian.Uint32(e.Data)))
			case "oifname":
				if len(e.Data) != unix.IFNAMSIZ {
					return fmt.Sprintf("bad ifname %q", e.Data)
				}
				words = append(words, fmt.Sprintf("oifname %q", strings.TrimRight(string(e.Data), "\x00")))
			case "l4proto":
				if len(e.Data) != 1 || e.Data[0] != unix.IPPROTO_TCP {
					return fmt.Sprintf("bad l4proto %v", e.Data)
				}
				words = append(words, "meta l4proto tcp")
			case "dport":
				words = append(words, fmt.Sprintf("tcp dport %d", binary.BigEndian.Uint16(e.Data)))
			}
		case *expr.Immediate:
			if e.Register != 1 || len(e.Data) != 2 {
				return fmt.Sprintf("bad immediate %+v", e)
			}
			loaded = fmt.Sprintf(":%d", binary.BigEndian.Uint16(e.Data))
		case *expr.Redir:
			if e.RegisterProtoMin != 1 || !strings.HasPrefix(loaded, ":") {
				return fmt.Sprintf("bad redir %+v", e)
			}
			words = append(words, "redirect to "+loaded)
		case *expr.Verdict:
			if e.Kind != expr.VerdictReturn {
				return fmt.Sprintf("bad verdict %+v", e)
			}
			words = append(words, "return")
		default:
			return fmt.Sprintf("unexpected %T", e)
		}
	}
	return strings.Join(words, " ")
}

func TestApply(t *testing.T) {
	r := Rules{
		ProxyUID: 1337, OutboundPort: 15001, InboundPort: 15006,
		ExcludeOutboundPorts: []uint16{443, 5432},
		ExcludeInboundPorts:  []uint16{15021},
	}
	var c fakeConn
	if err := Apply(&c, r); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"add table ip graft_redirect",
		"delete table ip graft_redirect",
		"add table ip graft_redirect",
		"add chain graft_redirect output { type nat hook output priority -100 }",
		"add chain graft_redirect prerouting { type nat hook prerouting priority -100 }",
		"add rule graft_redirect output meta skuid 1337 return",
		`add rule graft_redirect output oifname "lo" return`,
		"add rule graft_redirect output meta l4proto tcp tcp dport 443 return",
		"add rule graft_redirect output meta l4proto tcp tcp dport 5432 return",
		"add rule graft_redirect output meta l4proto tcp redirect to :15001",
		"add rule graft_redirect prerouting meta l4proto tcp tcp dport 15021 return",
		"add rule graft_redirect prerouting meta l4proto tcp redirect to :15006",
		"commit",
	}
	if diff := cmp.Diff(want, c.ops); diff != "" {
		t.Errorf("Apply (-want +got):\n%s", diff)
	}
}

func TestApplyRefusesAndReports(t *testing.T) {
	good := Rules{ProxyUID: 1337, OutboundPort: 15001, InboundPort: 15006}
	for _, tc := range []struct {
		name string
		r    func(Rules) Rules
		want string
	}{
		{"same ports", func(r Rules) Rules { r.InboundPort = r.OutboundPort; return r }, "both 15001"},
		{"no outbound port", func(r Rules) Rules { r.OutboundPort = 0; return r }, "must be set"},
		{"port 0 excluded", func(r Rules) Rules { r.ExcludeInboundPorts = []uint16{0}; return r }, "excluded inbound port 0"},
		{"too many excluded", func(r Rules) Rules { r.ExcludeOutboundPorts = make([]uint16, MaxExcludedPorts+1); return r }, "at most 64"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c fakeConn
			err := Apply(&c, tc.r(good))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if len(c.ops) != 0 {
				t.Errorf("queued %q before refusing", c.ops)
			}
		})
	}
	t.Run("flush fails", func(t *testing.T) {
		c := fakeConn{flushErr: unix.EPERM}
		err := Apply(&c, good)
		if !errors.Is(err, unix.EPERM) || !strings.Contains(err.Error(), TableName) {
			t.Fatalf("got %v, want the netlink error wrapped with the table's name", err)
		}
	})
}

func TestParsePorts(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []uint16
		err  string
	}{
		{"", nil, ""},
		{"  ", nil, ""},
		{"15021", []uint16{15021}, ""},
		{"8080, 15021,8080,1", []uint16{1, 8080, 15021}, ""},
		{"65535", []uint16{65535}, ""},
		{"0", nil, `port "0"`},
		{"65536", nil, `port "65536"`},
		{"80,", nil, `port ""`},
		{"http", nil, `port "http"`},
		{"-1", nil, `port "-1"`},
		{strings.Repeat("1,", MaxExcludedPorts) + "1", nil, "at most 64"},
	} {
		got, err := ParsePorts(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParsePorts(%q) = %v, %v; want an error containing %q", tc.in, got, err, tc.err)
			}
			continue
		}
		if err != nil || !cmp.Equal(got, tc.want) {
			t.Errorf("ParsePorts(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func FuzzParsePorts(f *testing.F) {
	for _, s := range []string{"", "15021", "1,2,3", "65535,0", " 80 , 443 "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ports, err := ParsePorts(s)
		if err != nil {
			return
		}
		if len(ports) > MaxExcludedPorts {
			t.Fatalf("%d ports", len(ports))
		}
		for i, p := range ports {
			if p == 0 || (i > 0 && ports[i-1] >= p) {
				t.Fatalf("ParsePorts(%q) = %v: not sorted, unique and nonzero", s, ports)
			}
		}
	})
}
