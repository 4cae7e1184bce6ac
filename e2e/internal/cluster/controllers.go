package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/graftdev/graft/internal/proc"
)

// startControllerManager runs kube-controller-manager as kubeadm does,
// under its own user: every controller on by default (`*`: among them
// serviceaccount and its token controller, namespace, garbagecollector,
// deployment, replicaset, statefulset, daemonset, job, cronjob,
// disruption and endpointslice), each controller with its own
// ServiceAccount's credentials, the API server's ServiceAccount key to
// sign tokens and its CA for the kube-root-ca.crt ConfigMap. Leader
// election is off (there is one), and so is its serving port (nothing
// scrapes it). It is ready once the serviceaccount controller has made
// the default namespace's ServiceAccount, which every Pod admission
// needs. extraArgs come last and so win.
func startControllerManager(ctx context.Context, bin, dir string, a *apiServer, client kubernetes.Interface, extraArgs []string) (*proc.Process, error) {
	kubeconfig := filepath.Join(dir, "kube-controller-manager.kubeconfig")
	if err := a.writeKubeconfig(kubeconfig, controllersUser); err != nil {
		return nil, err
	}
	p, err := proc.Start(proc.Spec{Name: "kube-controller-manager", Dir: dir, Bin: bin, Args: append([]string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=*",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + a.SAKeyFile,
		"--root-ca-file=" + a.CAFile,
		"--leader-elect=false",
		"--secure-port=0",
	}, extraArgs...)})
	if err != nil {
		return nil, err
	}
	err = proc.Poll(ctx, p, 100*time.Millisecond, func(ctx context.Context) error {
		_, err := client.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, defaultServiceAccount, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return p, fmt.Errorf("kube-controller-manager: no default ServiceAccount: %w", err)
	}
	return p, nil
}

// startScheduler runs kube-scheduler under its own user, leader election
// and serving port off. Nothing tells when it has synced; Pods it has not
// bound yet just wait for it, and whoever waits on them waits for it.
func startScheduler(bin, dir string, a *apiServer, extraArgs []string) (*proc.Process, error) {
	kubeconfig := filepath.Join(dir, "kube-scheduler.kubeconfig")
	if err := a.writeKubeconfig(kubeconfig, schedulerUser); err != nil {
		return nil, err
	}
	return proc.Start(proc.Spec{Name: "kube-scheduler", Dir: dir, Bin: bin, Args: append([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	}, extraArgs...)})
}

// writeKubeconfig writes a kubeconfig reaching the API server as user.
func (a *apiServer) writeKubeconfig(path, user string) error {
	token, ok := a.tokens[user]
	if !ok {
		return fmt.Errorf("kubeconfig: no token for %s", user)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["graft-e2e"] = &clientcmdapi.Cluster{Server: a.URL, CertificateAuthorityData: a.CA}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["graft-e2e"] = &clientcmdapi.Context{Cluster: "graft-e2e", AuthInfo: user}
	cfg.CurrentContext = "graft-e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("kubeconfig for %s: %w", user, err)
	}
	return nil
}
