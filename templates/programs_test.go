package templates_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/graftdev/graft/templates"
)

// The built-in templates' configurations handed to the programs that read
// them, built from their Go modules at the versions the templates' default
// images run (e2e/tools/otelcol; `make unit` builds it and names it in
// GRAFT_OTELCOL), or given (GRAFT_VAULT). The Envoy bootstrap is checked
// against Envoy's API in e2e/tools/envoycheck; Fluent Bit, a C program,
// cannot be built here: log-shipper's arguments are checked against its
// documented format in TestLogShipperArgs.

// program returns the path of a program `make unit` builds and names in
// env. Without it the test is skipped, except on CI, where a skipped check
// would pass unnoticed.
func program(t *testing.T, env string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not set; `make unit` builds the program and sets it", env)
		}
		t.Skipf("%s is not set; run `make unit`, which builds the program and sets it", env)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s: %v", env, err)
	}
	return path
}

// renderedCase is one lint case's containers, by name.
type renderedCase struct {
	label      string
	containers map[string]corev1.Container
}

// renderCases renders the built-in template name in every case lint
// tries.
func renderCases(t *testing.T, name string) []renderedCase {
	t.Helper()
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	tpl, ok := set.Get(name)
	if !ok {
		t.Fatalf("no template %s", name)
	}
	var out []renderedCase
	for _, c := range tpl.Cases() {
		f, err := tpl.Render(c.Overrides)
		if err != nil {
			t.Fatalf("%s: %v", c.Label, err)
		}
		rc := renderedCase{label: c.Label, containers: map[string]corev1.Container{}}
		for _, el := range append(f.InitContainers, f.Containers...) {
			var ctr corev1.Container
			if err := json.Unmarshal(el.Raw, &ctr); err != nil {
				t.Fatal(err)
			}
			rc.containers[ctr.Name] = ctr
		}
		out = append(out, rc)
	}
	if len(out) < 5 {
		t.Fatalf("only %d cases for %s", len(out), name)
	}
	return out
}

// runProgram runs bin with args and returns its combined output and error.
func runProgram(t *testing.T, bin string, env []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// TestOtelAgentConfigValidates: the Collector built with exactly the
// components the otel-agent template configures (e2e/tools/otelcol)
// validates the container's arguments, as the image's entrypoint receives
// them, in every case lint renders.
func TestOtelAgentConfigValidates(t *testing.T) {
	otelcol := program(t, "GRAFT_OTELCOL")
	cases := renderCases(t, "otel-agent")
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			agent, ok := c.containers["graft-otel-agent"]
			if !ok {
				t.Fatal("no graft-otel-agent container")
			}
			if len(agent.Command) != 0 {
				t.Fatalf("command %q: the image's entrypoint (the collector) is meant to run", agent.Command)
			}
			if out, err := runProgram(t, otelcol, nil, append([]string{"validate"}, agent.Args...)...); err != nil {
				t.Fatalf("otelcol validate refuses the configuration: %v\n%s\nargs: %q", err, out, agent.Args)
			}
		})
	}
	// The check fails where the collector would: an exporter the build
	// lacks, a field no component has.
	args := cases[0].containers["graft-otel-agent"].Args
	for _, tc := range []struct{ name, old, new string }{
		{"unknown exporter", "otlp_grpc:", "kafka:"},
		{"unknown field", "batch: {}", "batch: {bogus: 1}"},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			broken := append([]string{"validate"}, args...)
			for i, a := range broken {
				broken[i] = strings.Replace(a, tc.old, tc.new, 1)
			}
			if out, err := runProgram(t, otelcol, nil, broken...); err == nil {
				t.Fatalf("otelcol validate accepts a broken configuration:\n%s", out)
			}
		})
	}
}

// vaultAgentArgs reads the secrets-agent containers' shell command: the
// configuration it writes (GRAFT_VAULT_CONFIG) and the arguments it execs
// `vault agent` with.
func vaultAgentArgs(t *testing.T, c corev1.Container) (config string, args []string) {
	t.Helper()
	if len(c.Command) != 3 || c.Command[0] != "/bin/sh" {
		t.Fatalf("command %q: want /bin/sh -ec SCRIPT", c.Command)
	}
	_, tail, ok := strings.Cut(c.Command[2], "exec vault agent ")
	if !ok {
		t.Fatalf("script %q does not exec vault agent", c.Command[2])
	}
	for _, e := range c.Env {
		if e.Name == "GRAFT_VAULT_CONFIG" {
			config = e.Value
		}
	}
	if config == "" {
		t.Fatal("no GRAFT_VAULT_CONFIG")
	}
	return config, strings.Fields(tail)
}

// verifyVaultConfig runs Vault's agent on config with args (its -config
// pointed at a file holding config) in its verify-only mode: the agent's
// own loading and validation of its configuration, without a server.
func verifyVaultConfig(t *testing.T, vault, config string, args []string) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	full := []string{"agent", "-test-verify-only"}
	for _, a := range args {
		if strings.HasPrefix(a, "-config=") {
			a = "-config=" + path
		}
		full = append(full, a)
	}
	return runProgram(t, vault, []string{"VAULT_TEST_VERIFY_ONLY_DUMP_CONFIG=1"}, full...)
}

// TestSecretsAgentConfigParses: Vault's agent of the release the
// template's default image runs loads and validates both containers'
// configurations in every case lint renders. It runs when GRAFT_VAULT
// names a vault binary (from the image, say): Vault 1.21.4 does not build
// from the module proxy (its in-tree sdk is unpublished), so `make unit`
// cannot build one, and CI skips it too.
func TestSecretsAgentConfigParses(t *testing.T) {
	vault := os.Getenv("GRAFT_VAULT")
	if vault == "" {
		t.Skip("GRAFT_VAULT is not set: Vault 1.21.4 does not build from the module proxy; point it at a vault binary of that release")
	}
	cases := renderCases(t, "secrets-agent")
	for _, c := range cases {
		t.Run(c.label, func(t *testing.T) {
			for _, name := range []string{"graft-secrets-init", "graft-secrets-agent"} {
				ctr, ok := c.containers[name]
				if !ok {
					t.Fatalf("no %s container", name)
				}
				config, args := vaultAgentArgs(t, ctr)
				out, err := verifyVaultConfig(t, vault, config, args)
				if err != nil {
					t.Fatalf("%s: vault agent refuses the configuration: %v\n%s\n%s", name, err, out, config)
				}
				// The dump shows the agent read the template stanzas.
				if !strings.Contains(out, "Destination:") || !strings.Contains(out, "/var/run/graft-secrets/") {
					t.Errorf("%s: the agent's configuration holds no template destination:\n%s", name, out)
				}
			}
		})
	}
	config, args := vaultAgentArgs(t, cases[0].containers["graft-secrets-agent"])
	for _, tc := range []struct{ name, old, new string }{
		{"unknown stanza", `"vault":`, `"vaultt":`},
		{"bad duration", `"static_secret_render_interval": "5m"`, `"static_secret_render_interval": "often"`},
	} {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			if !strings.Contains(config, tc.old) {
				t.Fatalf("the configuration has no %q", tc.old)
			}
			if out, err := verifyVaultConfig(t, vault, strings.Replace(config, tc.old, tc.new, 1), args); err == nil {
				t.Fatalf("vault agent accepts a broken configuration:\n%s", out)
			}
		})
	}
}

// fluentBitFlags are the command-line options of Fluent Bit's CLI the
// log-shipper template may use, with whether each takes a value, as its
// documentation lists them (docs.fluentbit.io, "Configure Fluent Bit",
// command line interface; unchanged from 3.2 through the 4.x and 5.x
// lines): -H/--http, -P/--port, -f/--flush, -i/--input, -p/--prop,
// -o/--output, -m/--match.
var fluentBitFlags = map[string]bool{
	"--http": false, "--port": true, "--flush": true,
	"--input": true, "--prop": true, "--output": true, "--match": true,
}

// tailProperties are the tail input's documented properties the template
// sets (docs.fluentbit.io, inputs/tail).
var tailProperties = map[string]*regexp.Regexp{
	"path":            regexp.MustCompile(`^/\S+$`),
	"db":              regexp.MustCompile(`^/\S+$`),
	"mem_buf_limit":   regexp.MustCompile(`^[1-9][0-9]*[KMG]$`), // a size: a number and a unit
	"skip_long_lines": regexp.MustCompile(`^(on|off)$`),
}

// TestLogShipperArgs: Fluent Bit, a C program, cannot be built or run
// here, so the log-shipper's arguments are checked against Fluent Bit's
// documented command line in every case lint renders: only documented
// options, each with a value where it takes one, a tail input with
// documented properties of the documented form, a forward output to
// host:port, and a match for it.
func TestLogShipperArgs(t *testing.T) {
	forwardURL := regexp.MustCompile(`^forward://[a-z0-9]([-a-z0-9.]*[a-z0-9])?:([1-9][0-9]{0,4})$`)
	for _, c := range renderCases(t, "log-shipper") {
		t.Run(c.label, func(t *testing.T) {
			shipper, ok := c.containers["graft-log-shipper"]
			if !ok {
				t.Fatal("no graft-log-shipper container")
			}
			var input, output, match string
			props := map[string]string{}
			for _, a := range shipper.Args {
				flag, value, hasValue := strings.Cut(a, "=")
				takesValue, known := fluentBitFlags[flag]
				switch {
				case !known:
					t.Errorf("%q: not an option Fluent Bit documents", a)
					continue
				case takesValue != hasValue:
					t.Errorf("%q: %s takes a value: %t", a, flag, takesValue)
					continue
				}
				switch flag {
				case "--input":
					input = value
				case "--output":
					output = value
				case "--match":
					match = value
				case "--port", "--flush":
					if n, err := strconv.Atoi(value); err != nil || n < 1 {
						t.Errorf("%q: want a positive integer", a)
					}
				case "--prop":
					k, v, ok := strings.Cut(value, "=")
					if !ok {
						t.Errorf("%q: want KEY=VALUE", a)
					}
					props[k] = v
				}
			}
			if input != "tail" {
				t.Errorf("input %q, want tail", input)
			}
			for k, v := range props {
				re, ok := tailProperties[k]
				if !ok {
					t.Errorf("tail property %q is not one the template is checked for", k)
				} else if !re.MatchString(v) {
					t.Errorf("tail property %s=%q does not match %s", k, v, re)
				}
			}
			if !strings.HasSuffix(props["path"], "/*.log") {
				t.Errorf("tail path %q does not read the *.log files of the shared directory", props["path"])
			}
			if !forwardURL.MatchString(output) {
				t.Errorf("output %q is not forward://host:port", output)
			}
			if match != "*" {
				t.Errorf("match %q: the output must take every record", match)
			}
		})
	}
}
