package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/templates"
)

// suite is the shared control plane and graft's registration in it.
type suite struct {
	cluster   *cluster.Cluster
	client    kubernetes.Interface
	shipped   *cluster.Shipped
	webhook   *admissionv1.MutatingWebhookConfiguration // as registered
	templates []string                                  // built-in template names
	// templatesDir holds the suite's own templates (graft serve's
	// --templates-dir, through the config file).
	templatesDir string
	// serverVersion is what kube-apiserver reports, e.g. v1.37.2, and
	// serverMinor its minor version, 37.
	serverVersion string
	serverMinor   int
	// nodes is how many simulated nodes run.
	nodes int
}

// templateProfile is the profile the suite's config adds for each built-in
// template, so each can be injected on its own (/inject/<profile>).
func templateProfile(tpl string) string { return "e2e-" + tpl }

// suiteConfig is the configuration the engine's golden corpus is written
// against (inject's goldenConfig: the shipped profiles, the agent template
// as the default profile served on /inject, and two profiles exercising
// options), plus one profile per built-in template. The suite's
// expectations therefore do not move when the catalogue or the shipped
// default profile changes. graftConfig adds the suite's own templates.
func suiteConfig() (inject.Config, error) {
	set, err := templates.Builtin()
	if err != nil {
		return inject.Config{}, fmt.Errorf("built-in templates: %w", err)
	}
	cfg := inject.DefaultConfig()
	// As in goldenConfig: the corpus sets parameters the shipped profiles
	// lock beyond images, so here they lock images only (the shipped
	// locks are held by inject/guard_test.go and deploy/locks_test.go).
	for name, p := range cfg.Profiles {
		p.LockedParams = []string{"*.image"}
		cfg.Profiles[name] = p
	}
	cfg.DefaultProfile = "agent"
	cfg.Profiles["agent"] = inject.Profile{Templates: []string{"agent"}}
	cfg.Profiles["lenient"] = inject.Profile{Templates: []string{"agent"}, OnInvalidParams: inject.InvalidUseDefault}
	cfg.Profiles["hostnet"] = inject.Profile{Templates: []string{"agent"}, InjectHostNetwork: true}
	cfg.Profiles["keep"] = inject.Profile{Templates: []string{"agent"}, OnConflict: inject.ConflictKeep}
	cfg.Profiles["keep-otel-agent-log-shipper"] = inject.Profile{Templates: []string{"otel-agent", "log-shipper"}, OnConflict: inject.ConflictKeep}
	for _, name := range set.Names() {
		cfg.Profiles[templateProfile(name)] = inject.Profile{Templates: []string{name}}
	}
	return cfg, nil
}

// graftConfig is suiteConfig as the graft binary reads it, plus the
// suite's own templates in templatesDir (see writeSuiteTemplates) and
// their profiles, which include those of the engine's golden corpus.
func graftConfig(templatesDir string) ([]byte, error) {
	cfg, err := suiteConfig()
	if err != nil {
		return nil, err
	}
	cfg.Profiles[renderProfile] = inject.Profile{Templates: []string{renderTemplateName}}
	cfg.Profiles["classic"] = inject.Profile{Templates: []string{"classic-sidecar"}}
	cfg.Profiles["token-aware"] = inject.Profile{Templates: []string{"token-aware", "agent"}}
	cfg.Profiles[iptablesProfile] = iptablesProfileConfig()
	doc := configFile{Config: cfg}
	doc.Server.TemplatesDir = templatesDir
	return yaml.Marshal(doc)
}

// configFile is graft's configuration file: the engine's configuration at
// the top level, and the one server setting the suite makes.
type configFile struct {
	inject.Config
	Server struct {
		TemplatesDir string `json:"templatesDir"`
	} `json:"server"`
}

func startSuite(ctx context.Context, opts cluster.Options) (*suite, error) {
	s := &suite{nodes: opts.Nodes}
	var err error
	s.cluster, err = cluster.Start(ctx, opts)
	if err != nil {
		return s, err
	}
	s.client = s.cluster.Client
	v, err := s.client.Discovery().ServerVersion()
	if err != nil {
		return s, fmt.Errorf("server version: %w", err)
	}
	s.serverVersion = v.GitVersion
	if s.serverMinor, err = minorOf(v.GitVersion); err != nil {
		return s, err
	}
	set, err := templates.Builtin()
	if err != nil {
		return s, err
	}
	s.templates = set.Names()
	s.shipped, err = cluster.LoadShipped(repoRoot)
	if err != nil {
		return s, err
	}
	s.webhook, err = s.cluster.RegisterGraft(ctx, s.shipped)
	if err != nil {
		return s, err
	}
	ns, err := s.createNamespace(ctx, "e2e-probe", map[string]string{names.Inject: "enabled"})
	if err != nil {
		return s, err
	}
	if err := s.waitInjecting(ctx, ns); err != nil {
		return s, fmt.Errorf("webhook never took effect: %w", err)
	}
	return s, nil
}

func (s *suite) createNamespace(ctx context.Context, name string, labels map[string]string) (string, error) {
	return name, s.cluster.CreateNamespace(ctx, name, labels)
}

func (s *suite) waitInjecting(ctx context.Context, ns string) error {
	return s.cluster.WaitInjecting(ctx, ns)
}

// newNamespace creates a namespace for one test. Namespaces are never
// deleted: each run starts from a fresh etcd. Should the test fail, it
// says where the processes' logs are.
func newNamespace(t *testing.T, name string, labels map[string]string) string {
	t.Helper()
	t.Cleanup(func() { logsOnFailure(t) })
	ns, err := env.createNamespace(t.Context(), name, labels)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// logsOnFailure points a failed test at the processes' logs, which the
// run keeps when any test fails.
func logsOnFailure(t *testing.T) {
	if t.Failed() {
		t.Logf("the processes' logs: %s", strings.Join(env.cluster.LogFiles(), " "))
	}
}

// optedIn creates a namespace labelled for the default profile.
func optedIn(t *testing.T, name string) string {
	return newNamespace(t, name, map[string]string{names.Inject: "enabled"})
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// minorOf is the minor version of a Kubernetes version such as v1.37.2.
func minorOf(version string) (int, error) {
	var major, minor int
	if _, err := fmt.Sscanf(version, "v%d.%d.", &major, &minor); err != nil || major != 1 {
		return 0, fmt.Errorf("server version %q: want v1.NN.P", version)
	}
	return minor, nil
}

// needsKubernetes skips t on an API server older than 1.minor, which lacks
// what t needs (why, e.g. "MutatingAdmissionPolicy v1, GA in 1.36").
func needsKubernetes(t *testing.T, minor int, why string) {
	t.Helper()
	if env.serverMinor < minor {
		t.Skipf("kube-apiserver %s: needs 1.%d or later for %s", env.serverVersion, minor, why)
	}
}

// needsWorkloads skips t in an API-level run (GRAFT_E2E_API_ONLY), which
// has no controllers to run workloads and no nodes to run Pods.
func needsWorkloads(t *testing.T) {
	t.Helper()
	if env.cluster.APIOnly() {
		t.Skip("needs controllers and nodes: this is an API-level run (GRAFT_E2E_API_ONLY=1)")
	}
}
