package webhook

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/bench/corpus"
	"github.com/graftdev/graft/config"
)

// TestStrictHTTP sends, as raw bytes over a real connection, each kind
// of request no API server sends: each gets 400 (411 for a chunked body)
// with its reason at once, never a wait for the read timeout, and the
// connection is closed after the answer. What the API server sends, and
// HTTP/1.0, is served.
func TestStrictHTTP(t *testing.T) {
	// A read timeout far longer than the test waits: an answer that
	// comes is not the timeout's.
	ts := startServer(t, serverSetup{override: func(s *config.Server) { s.ReadTimeout = config.Duration{Duration: time.Minute} }})
	review := corpus.Review(corpus.Small)
	post := func(proto, eol string, extra ...string) []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, "POST /inject?timeout=3s %s%s", proto, eol)
		for _, h := range append([]string{"Host: graft", "Content-Type: application/json"}, extra...) {
			b.WriteString(h + eol)
		}
		return b.Bytes()
	}
	withBody := func(head []byte, eol string) []byte {
		return append(append(head, fmt.Sprintf("Content-Length: %d%s%s", len(review), eol, eol)...), review...)
	}
	chunked := func(head []byte) []byte {
		var b bytes.Buffer
		b.Write(head)
		b.WriteString("\r\n")
		fmt.Fprintf(&b, "%x\r\n%s\r\n0\r\n\r\n", len(review), review)
		return b.Bytes()
	}
	cases := []struct {
		name   string
		req    []byte
		status int
		reason string // in the body; the refusal counted under it
		label  string
	}{
		{"bare LF everywhere", withBody(post("HTTP/1.1", "\n"), "\n"), 400, "bare LF", refusedBareLF},
		{"bare LF in one header line", withBody(append(post("HTTP/1.1", "\r\n"), "X-Odd: 1\n"...), "\r\n"), 400, "bare LF", refusedBareLF},
		{"bare LF request line only", withBody(append([]byte("POST /inject HTTP/1.1\n"), post("", "\r\n")[len("POST /inject?timeout=3s \r\n"):]...), "\r\n"), 400, "bare LF", refusedBareLF},
		{"HTTP/9.9", withBody(post("HTTP/9.9", "\r\n"), "\r\n"), 400, `unsupported HTTP version "HTTP/9.9"`, refusedHTTPVersion},
		{"HTTP/2.0 in a request line", withBody(post("HTTP/2.0", "\r\n"), "\r\n"), 400, `unsupported HTTP version "HTTP/2.0"`, refusedHTTPVersion},
		{"chunked with Content-Length", chunked(append(post("HTTP/1.1", "\r\n"), fmt.Sprintf("Content-Length: %d\r\nTransfer-Encoding: chunked\r\n", len(review))...)),
			400, "conflicting framing", refusedConflictingFrame},
		{"Content-Length after chunked", chunked(append(post("HTTP/1.1", "\r\n"), fmt.Sprintf("Transfer-Encoding: chunked\r\ncontent-length: %d\r\n", len(review))...)),
			400, "conflicting framing", refusedConflictingFrame},
		{"chunked alone", chunked(append(post("HTTP/1.1", "\r\n"), "Transfer-Encoding: chunked\r\n"...)), 411, "send Content-Length", refusedChunked},
		{"what the API server sends", withBody(post("HTTP/1.1", "\r\n"), "\r\n"), 200, `"allowed":true`, ""},
		{"HTTP/1.0", withBody(post("HTTP/1.0", "\r\n"), "\r\n"), 200, `"allowed":true`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := metric(t, ts.reg, "graft_http_refusals_total", "reason", tc.label)
			c := dialTLS(t, ts.Addr().String(), "127.0.0.1")
			status, body, closed := exchange(t, c, tc.req, 5*time.Second)
			if status != tc.status || !strings.Contains(body, tc.reason) {
				t.Fatalf("got %d %q, want %d with %q", status, body, tc.status, tc.reason)
			}
			if tc.label == "" {
				return
			}
			if !closed {
				t.Error("connection left open after a refusal")
			}
			if got := metric(t, ts.reg, "graft_http_refusals_total", "reason", tc.label); got != before+1 {
				t.Errorf("graft_http_refusals_total{reason=%q} = %v, want %v", tc.label, got, before+1)
			}
		})
	}
}

// TestHeadScan: the scanner finds a bare LF anywhere in a head, however
// the head is split across reads, and nothing past the head's end.
func TestHeadScan(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", false},
		{"GET / HTTP/1.1\nHost: x\r\n\r\n", true},
		{"GET / HTTP/1.1\r\nHost: x\n\r\n", true},
		{"GET / HTTP/1.1\r\nHost: x\r\n\n", true},
		{"GET / HTTP/1.1\r\nHost: x\r\n\r\nbody\nwith\nLFs", false},
		{"\r\nGET / HTTP/1.1\r\n\r\n", false},
	} {
		for split := 0; split <= len(tc.in); split++ {
			var h headScan
			for _, part := range []string{tc.in[:split], tc.in[split:]} {
				for i := 0; i < len(part); i++ { // one byte at a time too
					h.scan([]byte(part[i : i+1]))
				}
			}
			var whole headScan
			whole.scan([]byte(tc.in[:split]))
			whole.scan([]byte(tc.in[split:]))
			if h.bareLF != tc.want || whole.bareLF != tc.want {
				t.Errorf("%q split at %d: bareLF %v/%v, want %v", tc.in, split, h.bareLF, whole.bareLF, tc.want)
			}
		}
	}
}

// dialTLS opens a TLS connection to addr from the loopback address src,
// trusting any certificate (the tests are about the bytes, not the PKI).
func dialTLS(t *testing.T, addr, src string) *tls.Conn {
	t.Helper()
	c, err := dialFrom(addr, src)
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(c, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err := tc.Handshake(); err != nil {
		c.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	return tc
}

func dialFrom(addr, src string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	return d.Dial("tcp", addr)
}

// exchange writes req and reads one response within d: its status and
// body, and for an error status whether the server closed the
// connection after it.
func exchange(t *testing.T, c net.Conn, req []byte, d time.Duration) (int, string, bool) {
	t.Helper()
	start := time.Now()
	if err := c.SetDeadline(start.Add(d)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response within %s: %v", d, err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode < 400 {
		return resp.StatusCode, string(body), false
	}
	_, err = br.ReadByte()
	closed := errors.Is(err, io.EOF) || (err != nil && !isTimeout(err))
	return resp.StatusCode, string(body), closed
}

func isTimeout(err error) bool {
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// FuzzHeadScan: on any bytes, split anywhere, the scanner finds a bare LF
// exactly when a line of the head (up to the first CRLF CRLF) ends with
// one.
func FuzzHeadScan(f *testing.F) {
	for _, s := range []string{"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/1.1\nHost: x\n\n", "\n", "\r\n\r\n\n", "a\r\rb\n"} {
		f.Add([]byte(s), uint16(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint16) {
		want := false
		for i, b := range in {
			if i >= 3 && string(in[i-3:i+1]) == "\r\n\r\n" {
				break
			}
			if b == '\n' && (i == 0 || in[i-1] != '\r') {
				want = true
				break
			}
		}
		at := int(split) % (len(in) + 1)
		var h headScan
		h.scan(in[:at])
		h.scan(in[at:])
		if h.bareLF != want {
			t.Fatalf("%q split at %d: bareLF %v, want %v", in, at, h.bareLF, want)
		}
	})
}

// FuzzHasField: hasField agrees with splitting the head into lines.
func FuzzHasField(f *testing.F) {
	for _, s := range []string{"Content-Length: 3\r\n", "Host: x\r\ncontent-length:1\r\n", "Content-Length", "x\ncontent-length: 1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want := false
		for _, line := range strings.Split(string(raw), "\n") {
			if k, _, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "content-length") {
				want = true
			}
		}
		if got := hasField(raw, "content-length"); got != want {
			t.Fatalf("%q: hasField %v, want %v", raw, got, want)
		}
	})
}
