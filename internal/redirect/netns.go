package redirect

import (
	"fmt"
	"os"

	"github.com/google/nftables"
)

// ApplyNetNS applies r in the network namespace at path (a file under
// /proc/<pid>/ns/net or /var/run/netns, as a CNI runtime passes it), or in
// the caller's own namespace when path is empty. The netlink socket is
// opened in that namespace; the calling thread never leaves its own.
func ApplyNetNS(path string, r Rules) error {
	var opts []nftables.ConnOption
	if path != "" {
		ns, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("network namespace: %w", err)
		}
		defer ns.Close()
		opts = append(opts, nftables.WithNetNSFd(int(ns.Fd())))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	return Apply(c, r)
}
