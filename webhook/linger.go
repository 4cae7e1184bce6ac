package webhook

import (
	"io"
	"net"
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

// markLinger asks c, if it is a webhook connection, to close gently.
func markLinger(c net.Conn) {
	if sc, ok := c.(*serverConn); ok {
		sc.linger.Store(true)
	}
}

func (c *serverConn) closeGently() error {
	raw := c.raw.Conn
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
