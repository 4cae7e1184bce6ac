package deploy

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"

	"github.com/graftdev/graft/internal/registration"
	"github.com/graftdev/graft/templates"
	"github.com/graftdev/graft/webhook/certgen"
)

const (
	chartDir = "helm/graft"
	// The release the comparisons with kustomize install: named so that
	// the chart's object names are deploy/'s.
	release = "graft"
	// kubeVersion is the API server version `helm template` assumes (the
	// chart requires 1.35 or later); the e2e suite's is v1.37.2.
	kubeVersion = "1.36.0"
)

// helm runs the helm binary `make unit` built, with its cache, config and
// data directories in a temporary directory so nothing outside is read or
// written.
type helm struct {
	bin string
	env []string
}

func newHelm(t *testing.T) *helm {
	t.Helper()
	home := t.TempDir()
	return &helm{bin: tool(t, "GRAFT_HELM"), env: []string{
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
	}}
}

func (h *helm) run(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	return run(t, h.env, h.bin, args...)
}

// template renders the chart as release graft in graft's namespace.
func (h *helm) template(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	return h.run(t, append([]string{"template", release, chartDir, "--namespace", namespace, "--kube-version", kubeVersion}, args...)...)
}

// render is template that must succeed, parsed into objects.
func (h *helm) render(t *testing.T, args ...string) output {
	t.Helper()
	out, err := h.template(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	return parseObjects(t, out)
}

// chartVariant is one way to install the chart: a values file of the
// chart's ci/ directory, plus for graft-certs the files `graft certs`
// writes (replacing the test certificates the file holds, so that the
// comparison with the self-signed overlay sees one Secret).
type chartVariant struct {
	name string
	args []string
}

// chartVariants lists every ci/<name>-values.yaml. certs is a directory
// holding ca.crt, tls.crt and tls.key; "" makes a fresh one.
func chartVariants(t *testing.T, certs string) []chartVariant {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no values files in %s/ci: %v", chartDir, err)
	}
	var vs []chartVariant
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), "-values.yaml")
		args := []string{"--values", f}
		if name == "graft-certs" {
			if certs == "" {
				certs = writeCerts(t)
			}
			args = append(args, graftCertsArgs(certs)...)
		}
		vs = append(vs, chartVariant{name: name, args: args})
	}
	return vs
}

// graftCertsArgs hands the chart what `graft certs --out dir` wrote.
func graftCertsArgs(dir string) []string {
	return []string{
		"--set-file", "certificates.graftCerts.tlsCrt=" + filepath.Join(dir, "tls.crt"),
		"--set-file", "certificates.graftCerts.tlsKey=" + filepath.Join(dir, "tls.key"),
		"--set-file", "certificates.caBundle=" + filepath.Join(dir, "ca.crt"),
	}
}

// writeCerts writes a CA and serving certificate for graft's Service, as
// `graft certs` does, and returns the directory.
func writeCerts(t *testing.T) string {
	t.Helper()
	b, err := certgen.Generate(certgen.Options{DNSNames: certgen.ServiceDNSNames(release, namespace)})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestChartCIValuesRenderAlone: chart-testing installs each ci/ values
// file on its own, so each renders with nothing else given.
func TestChartCIValuesRenderAlone(t *testing.T) {
	h := newHelm(t)
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no values files in %s/ci: %v", chartDir, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			// chart-testing names releases after the chart and a random suffix.
			out, err := h.run(t, "template", "graft-ct", chartDir, "--namespace", "ct-graft", "--kube-version", kubeVersion, "--values", f)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(parseObjects(t, out).find("Deployment"), func(o object) bool {
				return strings.HasPrefix(o.name, "graft-ct") && ownDeployment(o.name)
			}) {
				t.Error("no graft Deployment rendered")
			}
		})
	}
}

// TestChartCICertificates: the certificates inline in
// ci/graft-certs-values.yaml make a chain the API server would accept for
// graft's Service, and stay valid for at least another year.
func TestChartCICertificates(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "ci", "graft-certs-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Certificates struct {
			CABundle   string `json:"caBundle"`
			GraftCerts struct {
				TLSCrt string `json:"tlsCrt"`
				TLSKey string `json:"tlsKey"`
			} `json:"graftCerts"`
		} `json:"certificates"`
	}
	// Only the certificates are read; the schema checks the rest.
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	c := v.Certificates
	pair, err := tls.X509KeyPair([]byte(c.GraftCerts.TLSCrt), []byte(c.GraftCerts.TLSKey))
	if err != nil {
		t.Fatalf("tlsCrt and tlsKey: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	cas, err := parseCA([]byte(c.CABundle))
	if err != nil {
		t.Fatalf("caBundle: %v", err)
	}
	roots := x509.NewCertPool()
	for _, ca := range cas {
		roots.AddCert(ca)
		if time.Until(ca.NotAfter) < 365*24*time.Hour {
			t.Errorf("the CA expires %s: run graft certs --days 3650 again and replace the file's certificates", ca.NotAfter)
		}
	}
	if time.Until(leaf.NotAfter) < 365*24*time.Hour {
		t.Errorf("the serving certificate expires %s: run graft certs --days 3650 again and replace the file's certificates", leaf.NotAfter)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{DNSName: release + "." + namespace + ".svc", Roots: roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the API server would not accept the certificate for %s.%s.svc: %v", release, namespace, err)
	}
}

// TestChartLint: `helm lint --strict` finds nothing, with the defaults and
// with every variant.
func TestChartLint(t *testing.T) {
	h := newHelm(t)
	variants := append([]chartVariant{{name: "defaults"}}, chartVariants(t, "")...)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			out, err := h.run(t, append([]string{"lint", "--strict", chartDir, "--kube-version", kubeVersion}, v.args...)...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			for _, level := range []string{"[WARNING]", "[ERROR]"} {
				if bytes.Contains(out, []byte(level)) {
					t.Errorf("helm lint reports a %s:\n%s", level, out)
				}
			}
		})
	}
}

// TestChartIsDeterministic: rendering twice gives the same bytes, so a
// GitOps tool sees no drift, and no template calls a function whose result
// changes between renders or depends on the cluster.
func TestChartIsDeterministic(t *testing.T) {
	h := newHelm(t)
	for _, v := range chartVariants(t, "") {
		t.Run(v.name, func(t *testing.T) {
			first, err := h.template(t, v.args...)
			if err != nil {
				t.Fatal(err)
			}
			second, err := h.template(t, v.args...)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(first, second) {
				t.Error("two renders with the same values differ")
			}
		})
	}
	t.Run("functions", func(t *testing.T) {
		// Inside {{ }} only: the words may appear in comments and data.
		action := regexp.MustCompile(`(?s)\{\{.*?\}\}`)
		unstable := regexp.MustCompile(`\b(rand[A-Za-z]*|shuffle|uuidv4|gen(CA|PrivateKey|SelfSignedCert|SignedCert)[A-Za-z]*|derivePassword|htpasswd|bcrypt|now|date[A-Za-z]*|unixEpoch|lookup)\b`)
		// Every template, those of tests/ (helm test hooks) included.
		var files []string
		err := filepath.WalkDir(filepath.Join(chartDir, "templates"), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, path)
			}
			return err
		})
		if err != nil || len(files) == 0 {
			t.Fatalf("no templates: %v", err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range action.FindAll(data, -1) {
				if m := unstable.Find(a); m != nil {
					t.Errorf("%s: %s calls %s, whose result changes between renders or depends on the cluster", f, a, m)
				}
			}
		}
	})
}

// TestChartGrantsNothing: graft needs no access to the Kubernetes API and
// never writes to its own webhook configuration or policy, so the chart
// makes no RBAC objects for it and mounts no token, whatever the values.
// The one exception is opt-in and not graft's: audit.rbac.enabled gives
// `graft audit` (and audit.exporter its exporter) its own ServiceAccount,
// allowed to get and list only; watchdog.enabled gives graft watchdog its
// own, allowed what it needs (checkWatchdogRBAC).
func TestChartGrantsNothing(t *testing.T) {
	h := newHelm(t)
	for _, v := range chartVariants(t, "") {
		t.Run(v.name, func(t *testing.T) {
			out := h.render(t, v.args...)
			for _, o := range out {
				if bytes.Contains(o.yaml, []byte("app.kubernetes.io/component: audit")) {
					checkAuditRBAC(t, o.kind, o.name, o.yaml)
					continue
				}
				if bytes.Contains(o.yaml, []byte("app.kubernetes.io/component: watchdog")) {
					checkWatchdogRBAC(t, o.kind, o.name, o.yaml)
					continue
				}
				if slices.Contains([]string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}, o.kind) {
					t.Errorf("%s %s: graft needs no RBAC", o.kind, o.name)
				}
				if o.kind == "ServiceAccount" && !bytes.Contains(o.yaml, []byte("automountServiceAccountToken: false")) {
					t.Errorf("ServiceAccount %s mounts a token", o.name)
				}
				if o.kind == "Deployment" && !bytes.Contains(o.yaml, []byte("automountServiceAccountToken: false")) {
					t.Errorf("Deployment %s mounts a token", o.name)
				}
			}
		})
	}
}

// TestChartRefusesBadValues: values that cannot work fail the render with
// a message naming the value, not an install that fails later.
func TestChartRefusesBadValues(t *testing.T) {
	h := newHelm(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown certificate source", []string{"--set", "certificates.source=vault"}, "certificates.source"},
		{"graftCerts without files", []string{"--set", "certificates.source=graftCerts"}, "certificates."},
		{"caBundle not PEM", []string{"--set", "certificates.source=existingSecret", "--set", "certificates.caBundle=Zm9v"}, "certificates.caBundle"},
		{"default profile undefined", []string{"--set", "config.defaultProfile=nope"}, `config.defaultProfile "nope"`},
		{"no profiles", []string{"--set", "config.profiles=null"}, "config.profiles"},
		{"failurePolicy", []string{"--set", "webhook.failurePolicy=Maybe"}, "failurePolicy"},
		{"validationActions", []string{"--set", "policy.validationActions={Block}"}, "validationActions"},
		{"profile name not a label value", []string{"--set", "config.profiles.Bad_Name.templates={agent}"}, "Bad_Name"},
		{"unknown config key", []string{"--set", "config.defaultProfiel=enabled"}, "defaultProfiel"},
		{"unknown profile key", []string{"--set", "config.profiles.enabled.failuremode=deny"}, "failuremode"},
		{"unknown server key", []string{"--set", "config.server.budgte=1s"}, "budgte"},
		{"digest not a sha256 digest", []string{"--set", "image.digest=latest"}, "image.digest"},
		{"tag not a tag", []string{"--set", "image.tag=v1/../x"}, "image.tag"},
		{"network policy peer misspelt", []string{"--set", "networkPolicy.metricsFrom[0].namespaceSelecter.x=y"}, "namespaceSelecter"},
		// A budget keeping every replica stalls every node drain.
		{"one replica kept by the budget", []string{"--set", "replicas=1"}, "/podDisruptionBudget/minAvailable"},
		{"one replica kept by a percentage", []string{"--set", "replicas=1", "--set", "podDisruptionBudget.minAvailable=1%"}, "/podDisruptionBudget/minAvailable"},
		{"budget equal to replicas", []string{"--set", "replicas=3", "--set", "podDisruptionBudget.minAvailable=3"}, "podDisruptionBudget.minAvailable 3 keeps all 3 replicas"},
		{"budget above replicas", []string{"--set", "podDisruptionBudget.minAvailable=5"}, "podDisruptionBudget.minAvailable 5 keeps all 2 replicas"},
		{"percentage rounding up to replicas", []string{"--set", "podDisruptionBudget.minAvailable=51%"}, "podDisruptionBudget.minAvailable 51% keeps all 2 replicas"},
		{"budget neither number nor percentage", []string{"--set", "podDisruptionBudget.minAvailable=half"}, `podDisruptionBudget.minAvailable "half"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := h.template(t, c.args...)
			if err == nil {
				t.Fatalf("rendered with %v", c.args)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error does not name %q:\n%v", c.want, err)
			}
		})
	}
}

// TestChartBudgetLetsDrainsThrough: the budgets that leave a replica to
// evict render, one replica with minAvailable 0 included.
func TestChartBudgetLetsDrainsThrough(t *testing.T) {
	h := newHelm(t)
	for _, c := range []struct {
		replicas, minAvailable string
	}{{"1", "0"}, {"1", "0%"}, {"2", "1"}, {"2", "50%"}, {"3", "2"}, {"3", "66%"}} {
		t.Run(c.replicas+"/"+c.minAvailable, func(t *testing.T) {
			out := h.render(t, "--set", "replicas="+c.replicas, "--set", "podDisruptionBudget.minAvailable="+c.minAvailable)
			pdb := one[policyv1.PodDisruptionBudget](t, out, "PodDisruptionBudget", release)
			if got := pdb.Spec.MinAvailable.String(); got != c.minAvailable {
				t.Errorf("minAvailable %s, want %s", got, c.minAvailable)
			}
		})
	}
}

// TestChartFilesAreCopies: the chart carries copies of files that live
// elsewhere (a chart can only read its own directory); `make chart-files`
// refreshes them.
func TestChartFilesAreCopies(t *testing.T) {
	pairs := map[string]string{
		"components/monitoring/prometheusrule.yaml":  chartDir + "/files/prometheusrule.yaml",
		"components/monitoring/graft-dashboard.json": chartDir + "/files/graft-dashboard.json",
	}
	builtin, err := filepath.Glob("../templates/builtin/*.yaml")
	if err != nil || len(builtin) == 0 {
		t.Fatalf("no built-in templates: %v", err)
	}
	for _, f := range builtin {
		pairs[f] = filepath.Join(chartDir, "files", "templates", filepath.Base(f))
	}
	copies, err := filepath.Glob(filepath.Join(chartDir, "files", "templates", "*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(copies) != len(builtin) {
		t.Errorf("%s/files/templates has %d files, templates/builtin %d: run make chart-files", chartDir, len(copies), len(builtin))
	}
	for src, dst := range pairs {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not a copy of %s: run make chart-files", dst, src)
		}
	}
}

// checkAuditRBAC holds audit's RBAC objects to reading: a ClusterRole
// whose every verb is get or list, bound to audit's ServiceAccount only.
func checkAuditRBAC(t *testing.T, kind, name string, doc []byte) {
	t.Helper()
	var obj struct {
		Rules []struct {
			Verbs []string `json:"verbs"`
		} `json:"rules"`
		Subjects []struct {
			Name string `json:"name"`
		} `json:"subjects"`
	}
	if err := yaml.Unmarshal(doc, &obj); err != nil {
		t.Fatalf("%s %s: %v", kind, name, err)
	}
	switch kind {
	case "ClusterRole":
		if len(obj.Rules) == 0 {
			t.Errorf("ClusterRole %s grants nothing", name)
		}
		for _, r := range obj.Rules {
			for _, v := range r.Verbs {
				if v != "get" && v != "list" {
					t.Errorf("ClusterRole %s allows %q: audit only reads", name, v)
				}
			}
		}
	case "ClusterRoleBinding":
		if len(obj.Subjects) != 1 || !strings.HasSuffix(obj.Subjects[0].Name, "-audit") {
			t.Errorf("ClusterRoleBinding %s binds %v, want audit's ServiceAccount alone", name, obj.Subjects)
		}
	case "ServiceAccount", "Service", "ServiceMonitor":
	case "Deployment":
		// The exporter: it runs as audit's ServiceAccount, and only audits.
		var d appsv1.Deployment
		if err := yaml.UnmarshalStrict(doc, &d); err != nil {
			t.Fatalf("%s %s: %v", kind, name, err)
		}
		ps := d.Spec.Template.Spec
		if !strings.HasSuffix(ps.ServiceAccountName, "-audit") || len(ps.Containers) != 1 || len(ps.Containers[0].Args) == 0 || ps.Containers[0].Args[0] != "audit" {
			t.Errorf("Deployment %s: want graft audit run as audit's ServiceAccount, got %s running %v", name, ps.ServiceAccountName, ps.Containers[0].Args)
		}
	default:
		t.Errorf("%s %s: audit makes only a ClusterRole, its binding, a ServiceAccount and its exporter", kind, name)
	}
}

// TestChartGuaranteeFilesAreGenerated: the guarantee's assembly and the
// built-in templates' checks the chart builds its policies from are what
// `graft guarantee` runs and writes now; `make chart-files` refreshes them.
func TestChartGuaranteeFilesAreGenerated(t *testing.T) {
	set, err := templates.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	checks, err := registration.ChecksJSON(set)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{
		"files/guarantee-checks.json": checks,
		"templates/_guarantee.tpl":    []byte(registration.GuaranteeTemplate()),
	} {
		got, err := os.ReadFile(filepath.Join(chartDir, file))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s/%s is not what graft guarantee writes: run make chart-files", chartDir, file)
		}
	}
}
