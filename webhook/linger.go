package webhook

import (
	"crypto/tls"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// When fasthttp refuses a request before reading its body (413), it writes
// the reply and closes the connection while the client is still sending.
// Closing a socket with unread data makes the kernel send a reset, which
// can destroy the reply before the client reads it. A connection marked
// to linger therefore closes gently: it ends its side of the stream, then
// discards what the client still sends, bounded in bytes and time, before
// closing.
const (
	lingerTimeout  = 2 * time.Second
	lingerMaxBytes = 64 << 20
)

// lingerListener wraps the TLS listener so that connections can be marked
// to linger. It keeps *tls.Conn's methods visible, so fasthttp still sees
// a TLS connection.
type lingerListener struct{ net.Listener }

func (l lingerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*tls.Conn); ok {
		return &lingerConn{Conn: tc}, nil
	}
	return c, nil
}

type lingerConn struct {
	*tls.Conn
	linger atomic.Bool
}

// markLinger asks c, if it is a lingerConn, to close gently.
func markLinger(c net.Conn) {
	if lc, ok := c.(*lingerConn); ok {
		lc.linger.Store(true)
	}
}

func (c *lingerConn) Close() error {
	if !c.linger.Load() {
		return c.Conn.Close()
	}
	raw := c.Conn.NetConn()
	// close_notify, then FIN: the client reads the reply and then EOF.
	_ = c.Conn.CloseWrite()
	if cw, ok := raw.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	// Drain the still-encrypted bytes without decrypting them.
	_ = raw.SetReadDeadline(time.Now().Add(lingerTimeout))
	_, _ = io.CopyN(io.Discard, raw, lingerMaxBytes)
	return raw.Close()
}
