package cluster

import (
	"fmt"
	"net"
)

// freePorts returns n distinct free TCP ports on 127.0.0.1. All listeners
// are held until every port is chosen, so the n ports differ; another
// process could still take one before the child binds it, which the
// readiness checks then report.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func hostPort(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }
