// Command floor is the load tests' transport floor: a fasthttp TLS server
// that reads an AdmissionReview and answers with a fixed allowed review of
// the size asked for, so its throughput is what TLS, HTTP and the body
// alone cost on this machine. It takes graft's serving flags.
//
// The answer echoes the request's apiVersion and uid (found with sonic's
// searcher, about 0.3 µs) so the load generator checks it like any other;
// `?size=N` pads it to N bytes with a patch that adds one field.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/graftdev/graft/bench/peers/internal/peerkit"
	"github.com/valyala/fasthttp"
)

func main() { peerkit.Main("floor", run) }

func run(ctx context.Context, args []string, stderr io.Writer) error {
	f, err := peerkit.ParseFlags("floor", args, stderr)
	if err != nil {
		return err
	}
	tlsCfg, err := peerkit.TLSConfig(f.TLSCert, f.TLSKey)
	if err != nil {
		return err
	}
	ln, admin, err := peerkit.Listen(f)
	if err != nil {
		return err
	}
	return serve(ctx, tlsCfg, ln, admin)
}

// maxBody matches what a webhook must accept: reviews of a few MiB.
const maxBody = 7 << 20

func serve(ctx context.Context, tlsCfg *tls.Config, ln, adminLn net.Listener) error {
	h := newHandler()
	s := &fasthttp.Server{
		Handler:               h.serve,
		Name:                  "floor",
		MaxRequestBodySize:    maxBody,
		ReadTimeout:           30 * time.Second,
		WriteTimeout:          30 * time.Second,
		IdleTimeout:           90 * time.Second,
		NoDefaultServerHeader: true,
		NoDefaultContentType:  true,
	}
	adminErr := make(chan error, 1)
	go func() { adminErr <- peerkit.ServeAdmin(ctx, adminLn) }()
	go func() {
		<-ctx.Done()
		_ = s.ShutdownWithContext(context.Background())
	}()
	err := s.Serve(tls.NewListener(ln, tlsCfg))
	if ctx.Err() == nil {
		// Serve ended on its own: stop the admin server too.
		adminLn.Close()
	}
	if aerr := <-adminErr; err == nil {
		err = aerr
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
