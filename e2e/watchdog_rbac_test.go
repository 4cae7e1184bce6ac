package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"
)

// watchdogRBAC is the file whose grants graft watchdog runs with here.
const watchdogRBAC = "deploy/components/watchdog/rbac.yaml"

// watchdogKubeconfig writes a kubeconfig for the ServiceAccount
// graft-watchdog in ns, bound to the roles deploy/components/watchdog
// ships (the ClusterRole under a name of this test's, the Role in ns, where
// the watchdog's Lease goes): the watchdog then does its work with exactly
// the RBAC the docs write down, and a grant missing from it fails the test.
func watchdogKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	ctx := t.Context()
	data, err := os.ReadFile(filepath.Join(repoRoot, watchdogRBAC))
	if err != nil {
		t.Fatal(err)
	}
	clusterName := "e2e-" + ns
	var sa string
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", watchdogRBAC, err)
		}
		switch meta.Kind {
		case "ServiceAccount":
			var o corev1.ServiceAccount
			mustUnmarshal(t, doc, &o)
			o.Namespace, sa = ns, o.Name
			_, err = env.client.CoreV1().ServiceAccounts(ns).Create(ctx, &o, metav1.CreateOptions{})
		case "ClusterRole":
			var o rbacv1.ClusterRole
			mustUnmarshal(t, doc, &o)
			o.Name = clusterName
			_, err = env.client.RbacV1().ClusterRoles().Create(ctx, &o, metav1.CreateOptions{})
		case "ClusterRoleBinding":
			var o rbacv1.ClusterRoleBinding
			mustUnmarshal(t, doc, &o)
			o.Name, o.RoleRef.Name = clusterName, clusterName
			for i := range o.Subjects {
				o.Subjects[i].Namespace = ns
			}
			_, err = env.client.RbacV1().ClusterRoleBindings().Create(ctx, &o, metav1.CreateOptions{})
		case "Role":
			var o rbacv1.Role
			mustUnmarshal(t, doc, &o)
			o.Namespace = ns
			_, err = env.client.RbacV1().Roles(ns).Create(ctx, &o, metav1.CreateOptions{})
		case "RoleBinding":
			var o rbacv1.RoleBinding
			mustUnmarshal(t, doc, &o)
			o.Namespace = ns
			for i := range o.Subjects {
				o.Subjects[i].Namespace = ns
			}
			_, err = env.client.RbacV1().RoleBindings(ns).Create(ctx, &o, metav1.CreateOptions{})
		default:
			t.Fatalf("%s: a %q: want RBAC objects and a ServiceAccount only", watchdogRBAC, meta.Kind)
		}
		if err != nil {
			t.Fatalf("%s %s: %v", meta.Kind, watchdogRBAC, err)
		}
	}
	if sa == "" {
		t.Fatalf("%s has no ServiceAccount", watchdogRBAC)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, err := range []error{
			env.client.RbacV1().ClusterRoleBindings().Delete(ctx, clusterName, metav1.DeleteOptions{}),
			env.client.RbacV1().ClusterRoles().Delete(ctx, clusterName, metav1.DeleteOptions{}),
		} {
			if err != nil && !isNotFound(err) {
				t.Errorf("remove the watchdog's RBAC: %v", err)
			}
		}
	})
	expiry := int64(2 * time.Hour / time.Second)
	tr, err := env.client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authv1.TokenRequest{Spec: authv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for %s/%s: %v", ns, sa, err)
	}
	rc := env.cluster.RESTConfig()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: rc.Host, CertificateAuthorityData: rc.CAData}
	cfg.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: sa}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "watchdog.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustUnmarshal(t *testing.T, doc []byte, into any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(doc, into); err != nil {
		t.Fatalf("%s: %v", watchdogRBAC, fmt.Errorf("%T: %w", into, err))
	}
}
