package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/graftdev/graft/internal/proc"
	"github.com/graftdev/graft/webhook/certgen"
)

// apiServer is a running kube-apiserver and what a client needs to reach it.
type apiServer struct {
	proc  *proc.Process
	URL   string // https://127.0.0.1:<port>
	Token string // bearer token of a system:masters user
	CA    []byte // PEM CA of its serving certificate
	// CAFile holds CA; SAKeyFile is the key it signs ServiceAccount
	// tokens with, which kube-controller-manager's token controller
	// signs with too.
	CAFile, SAKeyFile string
	// tokens are the bearer tokens of the other components' users.
	tokens map[string]string
}

// The users the components authenticate as, each with its own token, as
// kubeadm gives each its own credentials: the bootstrap RBAC policy binds
// the controller manager's and the scheduler's names to their roles. kwok
// plays every kubelet and, as kwokctl runs it, is an administrator.
const (
	adminUser       = "e2e-admin"
	controllersUser = "system:kube-controller-manager"
	schedulerUser   = "system:kube-scheduler"
	kwokUser        = "kwok"
)

// userGroups are the groups each user's token puts it in.
var userGroups = map[string]string{
	adminUser:       "system:masters",
	controllersUser: "",
	schedulerUser:   "",
	kwokUser:        "system:masters",
}

// startAPIServer runs kube-apiserver against etcdURL on a free loopback
// port with token auth, RBAC and freshly generated certificates, and waits
// until /readyz answers ok. extraArgs are added to its flags.
func startAPIServer(ctx context.Context, bin, dir, etcdURL string, extraArgs ...string) (*apiServer, error) {
	pki := filepath.Join(dir, "apiserver-pki")
	serving, err := certgen.Generate(certgen.Options{
		DNSNames: []string{"localhost"},
		IPs:      []net.IP{net.IPv4(127, 0, 0, 1)},
	})
	if err != nil {
		return nil, fmt.Errorf("apiserver certificates: %w", err)
	}
	if err := serving.Write(pki); err != nil {
		return nil, fmt.Errorf("apiserver certificates: %w", err)
	}
	saKey, saPub, err := serviceAccountKeys()
	if err != nil {
		return nil, err
	}
	tokens := map[string]string{}
	var csv strings.Builder
	for _, user := range slices.Sorted(maps.Keys(userGroups)) {
		if tokens[user], err = randomHex(16); err != nil {
			return nil, err
		}
		fmt.Fprintf(&csv, "%s,%s,%s", tokens[user], user, user)
		if g := userGroups[user]; g != "" {
			fmt.Fprintf(&csv, ",%q", g)
		}
		csv.WriteString("\n")
	}
	files := map[string][]byte{
		"sa.key":     saKey,
		"sa.pub":     saPub,
		"tokens.csv": []byte(csv.String()),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(pki, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("apiserver: %w", err)
		}
	}
	addrs, err := proc.FreeAddrs(1)
	if err != nil {
		return nil, err
	}
	a := &apiServer{
		URL: "https://" + addrs[0].String(), Token: tokens[adminUser], CA: serving.CACert,
		CAFile: filepath.Join(pki, certgen.CAFile), SAKeyFile: filepath.Join(pki, "sa.key"),
		tokens: tokens,
	}
	a.proc, err = proc.Start(proc.Spec{Name: "kube-apiserver", Dir: dir, Bin: bin, Args: append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// 1.37 refuses a loopback advertise address for the endpoint
		// reconciler, whose only work is the kubernetes Service's
		// endpoints: nothing here reaches the API server through them.
		"--endpoint-reconciler-type=none",
		fmt.Sprintf("--secure-port=%d", addrs[0].Port()),
		"--cert-dir=" + pki,
		"--tls-cert-file=" + filepath.Join(pki, certgen.CertFile),
		"--tls-private-key-file=" + filepath.Join(pki, certgen.KeyFile),
		"--token-auth-file=" + filepath.Join(pki, "tokens.csv"),
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + filepath.Join(pki, "sa.pub"),
		"--service-account-signing-key-file=" + filepath.Join(pki, "sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		// The admission plugins are left at their defaults, as clusters
		// run them. Among them are ServiceAccount and LimitRanger, which
		// re-run after the webhooks, and both admission policy kinds (GA
		// in 1.36). The ServiceAccount plugin needs each namespace's
		// default ServiceAccount, which kube-controller-manager's
		// serviceaccount controller creates. API Priority and Fairness stays
		// on too: every request a user makes goes through APF's queues,
		// so the load tests measure them.
		// Profiling stays on (the default), so a load test can take a CPU
		// profile from /debug/pprof/profile.
	}, extraArgs...)})
	if err != nil {
		return nil, err
	}
	hc := loopbackHTTPClient(a.CA, 5*time.Second)
	err = proc.Poll(ctx, a.proc, 250*time.Millisecond, func(ctx context.Context) error {
		_, err := proc.Get(ctx, hc, a.URL+"/readyz", http.Header{"Authorization": {"Bearer " + a.Token}})
		return err
	})
	if err != nil {
		return a, fmt.Errorf("kube-apiserver: %w", err)
	}
	return a, nil
}

// serviceAccountKeys makes the key pair kube-apiserver signs and checks
// ServiceAccount tokens with; it insists on having one.
func serviceAccountKeys() (key, pub []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("service account key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, nil, fmt.Errorf("service account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		return nil, nil, fmt.Errorf("service account key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random: %w", err)
	}
	return hex.EncodeToString(b), nil
}
