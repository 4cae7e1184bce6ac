package main

import (
	"fmt"
	"net"

	"github.com/graftdev/graft/internal/admin"
)

// adminPort binds the admin port of `graft audit --serve` or `graft
// watchdog` on addr, given by flag, to serve o and this build's version.
// (graft serve's is bound by the webhook server, on --admin-addr.)
func adminPort(flag, addr string, o admin.Options) (*admin.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--%s: %w", flag, err)
	}
	o.Version = buildInfo().String()
	return admin.New(ln, o), nil
}
