package main

import (
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/graftdev/graft/internal/redirect"
)

type proxyInitFlags struct {
	proxyUID        uint32
	inboundPort     uint16
	outboundPort    uint16
	excludeInbound  string
	excludeOutbound string
	netns           string
}

func newProxyInitCmd() *cobra.Command {
	var f proxyInitFlags
	cmd := &cobra.Command{
		Use:   "proxy-init",
		Short: "Redirect the Pod's TCP traffic through its proxy (the mesh-proxy template's init container)",
		Long: `proxy-init programs the network namespace it runs in (or --netns) with
nftables, through netlink, so that the Pod's TCP connections pass through
its proxy: outbound ones to --outbound-port, except the proxy's own
(--proxy-uid), those leaving through loopback and those to
--exclude-outbound-ports; inbound ones to --inbound-port, except those to
--exclude-inbound-ports. The proxy connects each on to the address it was
sent to. IPv6 is not redirected.

It replaces its own table (` + redirect.TableName + `) whole, in one transaction,
so running it again is harmless. It needs CAP_NET_ADMIN in the namespace:
the mesh-proxy template runs it as root with that capability alone.`,
		Example: `  graft proxy-init --proxy-uid=1337 --exclude-inbound-ports=15021 --exclude-outbound-ports=5432`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runProxyInit(cmd.OutOrStdout(), f)
		},
	}
	fl := cmd.Flags()
	fl.Uint32Var(&f.proxyUID, "proxy-uid", 1337, "uid the proxy runs as; its connections are not redirected")
	fl.Uint16Var(&f.outboundPort, "outbound-port", 15001, "port the proxy takes redirected outbound connections on")
	fl.Uint16Var(&f.inboundPort, "inbound-port", 15006, "port the proxy takes redirected inbound connections on")
	fl.StringVar(&f.excludeOutbound, "exclude-outbound-ports", "", "comma-separated destination ports whose outbound connections bypass the proxy")
	fl.StringVar(&f.excludeInbound, "exclude-inbound-ports", "", "comma-separated Pod ports whose inbound connections bypass the proxy")
	fl.StringVar(&f.netns, "netns", "", "network namespace to program, as a path (/proc/PID/ns/net, /var/run/netns/NAME); default: this process's")
	return cmd
}

func runProxyInit(stdout io.Writer, f proxyInitFlags) error {
	r := redirect.Rules{ProxyUID: f.proxyUID, OutboundPort: f.outboundPort, InboundPort: f.inboundPort}
	var err error
	if r.ExcludeOutboundPorts, err = redirect.ParsePorts(f.excludeOutbound); err != nil {
		return fmt.Errorf("proxy-init: --exclude-outbound-ports: %w", err)
	}
	if r.ExcludeInboundPorts, err = redirect.ParsePorts(f.excludeInbound); err != nil {
		return fmt.Errorf("proxy-init: --exclude-inbound-ports: %w", err)
	}
	if err := redirect.ApplyNetNS(f.netns, r); err != nil {
		return fmt.Errorf("proxy-init: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "proxy-init: TCP outbound -> :%d (not uid %d, loopback, ports %s), inbound -> :%d (not ports %s)\n",
		r.OutboundPort, r.ProxyUID, portList(r.ExcludeOutboundPorts), r.InboundPort, portList(r.ExcludeInboundPorts))
	return err
}

func portList(ps []uint16) string {
	if len(ps) == 0 {
		return "none"
	}
	var b []byte
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(p), 10)
	}
	return string(b)
}
