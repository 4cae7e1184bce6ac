// Package firstlog is what the stand-in sidecars share: an HTTP handler
// that writes to stdout, to the nanosecond, the first time each path
// answers 200, which is when the kubelet's probe of it first succeeded
// (the real-node tests compare it with the app's start), and a serve loop
// that stops on SIGTERM.
package firstlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// Handler wraps h, logging the first 200 answer of each path as
// "NAME: GET PATH answered 200 first at TIME".
func Handler(name string, h http.Handler) http.Handler {
	var mu sync.Mutex
	seen := map[string]bool{}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &status{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		if rec.code != http.StatusOK {
			return
		}
		mu.Lock()
		first := !seen[r.URL.Path]
		seen[r.URL.Path] = true
		mu.Unlock()
		if first {
			fmt.Printf("%s: %s %s answered 200 first at %s\n", name, r.Method, r.URL.Path, time.Now().Format(time.RFC3339Nano))
		}
	})
}

type status struct {
	http.ResponseWriter
	code int
}

func (s *status) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// Server is one address served: over HTTP by Handler, or, when TCP is
// set, by TCP, which accepts on the listener until it is closed.
type Server struct {
	Addr    string
	Handler http.Handler
	TCP     func(net.Listener) error
}

// Serve serves each server until SIGTERM or SIGINT, then returns nil; an
// address that cannot be bound is an error at once.
func Serve(name string, servers ...Server) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errs := make(chan error, len(servers))
	var all []io.Closer
	for _, s := range servers {
		l, err := net.Listen("tcp", s.Addr)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if s.TCP != nil {
			all = append(all, l)
			go func() { errs <- s.TCP(l) }()
		} else {
			srv := &http.Server{Handler: Handler(name, s.Handler), ReadHeaderTimeout: 5 * time.Second}
			all = append(all, srv)
			go func() { errs <- srv.Serve(l) }()
		}
		fmt.Printf("%s: listening on %s\n", name, l.Addr())
	}
	select {
	case <-ctx.Done():
	case err := <-errs:
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			return err
		}
	}
	for _, srv := range all {
		srv.Close()
	}
	fmt.Printf("%s: stopped\n", name)
	return nil
}

// Fail prints the error and exits 1, as a program whose configuration is
// refused does.
func Fail(name string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(1)
}
