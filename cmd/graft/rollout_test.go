package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/graftdev/graft/rollout"
)

func TestRolloutMode(t *testing.T) {
	for _, tt := range []struct {
		dryRun         string
		apply, changed bool
		want, err      string
	}{
		{dryRun: "client", want: "client"},
		{dryRun: "server", changed: true, want: "server"},
		{dryRun: "none", changed: true, want: "none"},
		{dryRun: "client", apply: true, want: "none"},
		{dryRun: "none", apply: true, changed: true, want: "none"},
		{dryRun: "client", apply: true, changed: true, err: "--apply acts and --dry-run=client does not"},
		{dryRun: "server", apply: true, changed: true, err: "--apply acts and --dry-run=server does not"},
		{dryRun: "true", changed: true, err: "--dry-run=true: want none, client or server"},
	} {
		got, err := rolloutMode(tt.dryRun, tt.apply, tt.changed)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("rolloutMode(%q, apply %v, changed %v) = %q, %v; want error %q", tt.dryRun, tt.apply, tt.changed, got, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("rolloutMode(%q, apply %v, changed %v) = %q, %v; want %q", tt.dryRun, tt.apply, tt.changed, got, err, tt.want)
		}
	}
}

// A plan acting on several namespaces says how many; from a terminal it
// needs --yes; reported owners do not count.
func TestConfirmNamespaces(t *testing.T) {
	item := func(ns string, a rollout.Action) rollout.Item {
		return rollout.Item{Owner: rollout.Owner{Namespace: ns, Kind: "Deployment", Name: "web"}, Action: a}
	}
	one := &rollout.Plan{Items: []rollout.Item{item("shop", rollout.Restart), item("shop", rollout.InPlace), item("db", rollout.Report)}}
	two := &rollout.Plan{Items: []rollout.Item{item("shop", rollout.Restart), item("db", rollout.Restart), item("db", rollout.InPlace)}}
	for _, tt := range []struct {
		name           string
		plan           *rollout.Plan
		yes, terminal  bool
		err, announced string
	}{
		{name: "one namespace, terminal", plan: one, terminal: true},
		{name: "two namespaces, terminal", plan: two, terminal: true, err: "the plan acts on 3 owners in 2 namespaces: give --yes to go ahead"},
		{name: "two namespaces, terminal, --yes", plan: two, terminal: true, yes: true, announced: "graft: acting on 3 owners in 2 namespaces\n"},
		{name: "two namespaces, a script", plan: two, announced: "graft: acting on 3 owners in 2 namespaces\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := confirmNamespaces(&stderr, tt.plan, tt.yes, tt.terminal)
			if (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v, want %q", err, tt.err)
			}
			if stderr.String() != tt.announced {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.announced)
			}
		})
	}
}
