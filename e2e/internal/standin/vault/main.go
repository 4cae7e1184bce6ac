// Command vault stands in for `vault agent` on the harness's real nodes
// until the real agent is built from its module. It reads the agent
// configuration the secrets-agent template writes (JSON), and renders each
// template's destination with a stand-in secret (the real agent logs in to
// a Vault server and renders its secret): once and exits with
// -exit-after-auth, else again every static_secret_render_interval until
// SIGTERM.
//
//	vault agent -config=FILE [-exit-after-auth]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/graftdev/graft/e2e/internal/standin/firstlog"
)

const name = "vault agent (stand-in)"

type config struct {
	Vault struct {
		Address string `json:"address"`
	} `json:"vault"`
	AutoAuth struct {
		Method []struct {
			Type      string            `json:"type"`
			MountPath string            `json:"mount_path"`
			Config    map[string]string `json:"config"`
			// ExitOnErr: the agent exits when authentication fails (the
			// init container's), instead of retrying.
			ExitOnErr bool `json:"exit_on_err"`
		} `json:"method"`
	} `json:"auto_auth"`
	TemplateConfig struct {
		StaticSecretRenderInterval string `json:"static_secret_render_interval"`
		ExitOnRetryFailure         bool   `json:"exit_on_retry_failure"`
	} `json:"template_config"`
	Template []struct {
		Destination       string `json:"destination"`
		Contents          string `json:"contents"`
		Perms             string `json:"perms"`
		ErrorOnMissingKey bool   `json:"error_on_missing_key"`
	} `json:"template"`
}

func main() {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		firstlog.Fail(name, errors.New("only `vault agent` is known"))
	}
	fl := flag.NewFlagSet("agent", flag.ContinueOnError)
	path := fl.String("config", "", "agent configuration")
	exitAfterAuth := fl.Bool("exit-after-auth", false, "render once and exit")
	if err := fl.Parse(os.Args[2:]); err != nil {
		firstlog.Fail(name, err)
	}
	data, err := os.ReadFile(*path)
	if err != nil {
		firstlog.Fail(name, err)
	}
	var c config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		firstlog.Fail(name, fmt.Errorf("%s: %w", *path, err))
	}
	if c.Vault.Address == "" || len(c.AutoAuth.Method) == 0 || len(c.Template) == 0 {
		firstlog.Fail(name, fmt.Errorf("%s: want vault.address, an auto_auth method and templates", *path))
	}
	every := 5 * time.Minute
	if s := c.TemplateConfig.StaticSecretRenderInterval; s != "" {
		if every, err = time.ParseDuration(s); err != nil {
			firstlog.Fail(name, fmt.Errorf("static_secret_render_interval: %w", err))
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	for {
		if err := render(c); err != nil {
			firstlog.Fail(name, err)
		}
		if *exitAfterAuth {
			return
		}
		select {
		case <-ctx.Done():
			fmt.Printf("%s: stopped\n", name)
			return
		case <-time.After(every):
		}
	}
}

func render(c config) error {
	for _, t := range c.Template {
		perm := os.FileMode(0o640)
		if t.Perms != "" {
			p, err := strconv.ParseUint(t.Perms, 8, 32)
			if err != nil {
				return fmt.Errorf("perms %q: %w", t.Perms, err)
			}
			perm = os.FileMode(p)
		}
		if err := os.MkdirAll(filepath.Dir(t.Destination), 0o755); err != nil {
			return err
		}
		tmp := t.Destination + ".tmp"
		if err := os.WriteFile(tmp, []byte(`{"stand-in":"no Vault server: this is the stand-in agent's secret"}`), perm); err != nil {
			return err
		}
		if err := os.Rename(tmp, t.Destination); err != nil {
			return err
		}
		fmt.Printf("%s: rendered %s at %s\n", name, t.Destination, time.Now().Format(time.RFC3339Nano))
	}
	return nil
}
