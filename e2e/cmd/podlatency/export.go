package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/graftdev/graft/e2e/internal/cluster"
	"github.com/graftdev/graft/export"
	"github.com/graftdev/graft/inject"
	"github.com/graftdev/graft/templates"
)

// setupExport creates the policies `graft export` writes for graft's
// default profile, bound to their own namespace: the same injection as
// graft, without the webhook.
func setupExport(ctx context.Context, c *cluster.Cluster, sidecar string) (variant, error) {
	v := variant{name: "graft-export", ns: "lat-graft-export", injected: injectedBy(sidecar)}
	set, err := templates.Builtin()
	if err != nil {
		return v, err
	}
	cfg := inject.DefaultConfig()
	pols, err := export.Export(cfg, set, cfg.DefaultProfile)
	if err != nil {
		return v, err
	}
	// The exported bindings select graft.dev/inject=enabled, which the
	// graft variant's webhook serves too.
	cluster.SelectNamespaces(pols, &metav1.LabelSelector{MatchLabels: map[string]string{variantLabel: v.name}})
	if err := c.CreatePolicies(ctx, pols); err != nil {
		return v, fmt.Errorf("exported policies: %w", err)
	}
	return v, c.CreateNamespace(ctx, v.ns, map[string]string{variantLabel: v.name})
}
