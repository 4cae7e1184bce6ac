// Command conventional is the load tests' conventional peer: graft's
// injection written the way most injectors are today. net/http, the whole
// review and Pod decoded with encoding/json into k8s.io/api types, the Pod
// mutated, re-marshalled and diffed against the request with
// gomodules.xyz/jsonpatch/v2 CreatePatch (what controller-runtime's
// admission.PatchResponseFromRaw does). It injects what graft's default
// profile injects, from graft's own rendered templates, and takes graft's
// serving flags and TLS settings.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/graftdev/graft/bench/peers/internal/peerkit"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

func main() { peerkit.Main("conventional", run) }

func run(ctx context.Context, args []string, stderr io.Writer) error {
	f, err := peerkit.ParseFlags("conventional", args, stderr)
	if err != nil {
		return err
	}
	in, err := newInjector()
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
	srv := &http.Server{
		Handler:           in,
		TLSConfig:         tlsCfg,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
	}
	return serve(ctx, srv, ln, admin)
}

// newInjector renders the templates of graft's default profile, with the
// profile's parameters, as `graft serve` does with no configuration.
func newInjector() (*injector, error) {
	set, err := templates.Builtin()
	if err != nil {
		return nil, err
	}
	cfg := inject.DefaultConfig()
	prof, ok := cfg.Profiles[cfg.DefaultProfile]
	if !ok {
		return nil, fmt.Errorf("default profile %q is not defined", cfg.DefaultProfile)
	}
	var parts []part
	for _, name := range prof.Templates {
		t, ok := set.Get(name)
		if !ok {
			return nil, fmt.Errorf("template %q is missing", name)
		}
		frag, err := t.Render(prof.Params[name])
		if err != nil {
			return nil, err
		}
		parts = append(parts, part{name: name, placement: t.Placement, frag: frag})
	}
	return newInjectorFrom(parts)
}

func serve(ctx context.Context, srv *http.Server, ln, adminLn net.Listener) error {
	adminErr := make(chan error, 1)
	go func() { adminErr <- peerkit.ServeAdmin(ctx, adminLn) }()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	err := srv.ServeTLS(ln, "", "")
	if ctx.Err() == nil {
		adminLn.Close()
	}
	if aerr := <-adminErr; err == nil || errors.Is(err, http.ErrServerClosed) {
		err = aerr
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
