// Package cni is graft's chained CNI plugin, graft-cni: when the container
// runtime sets up a Pod's network, it reads the Pod's redirect.graft.dev/*
// annotations (written by the mesh-proxy template with trafficRedirect:
// cni) and programs the redirection in the Pod's network namespace, as
// `graft proxy-init` would from inside the Pod, so the Pod needs no
// privileged init container and stays within Pod Security restricted.
//
// The runtime hands the plugin the Pod's annotations only if the plugin's
// entry in the network configuration list declares the capability
// io.kubernetes.cri.pod-annotations (containerd's CRI plugin passes it;
// checked in containerd 1.6.20's pkg/cri/server/sandbox_run.go). The
// plugin runs after the main plugin, whose result it passes on unchanged.
package cni

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/containernetworking/cni/pkg/skel"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"

	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/internal/redirect"
)

// PluginType is the plugin's type in a network configuration list and the
// name of its executable in the runtime's CNI bin directory.
const PluginType = "graft-cni"

// PodAnnotationsCapability is the runtime capability under which
// containerd passes the Pod's annotations (runtimeConfig).
const PodAnnotationsCapability = "io.kubernetes.cri.pod-annotations"

// The annotations the mesh-proxy template writes, under names.RedirectPrefix.
const (
	annoMode            = names.RedirectPrefix + "mode"
	annoProxyUID        = names.RedirectPrefix + "proxy-uid"
	annoInboundPort     = names.RedirectPrefix + "inbound-port"
	annoOutboundPort    = names.RedirectPrefix + "outbound-port"
	annoExcludeInbound  = names.RedirectPrefix + "exclude-inbound-ports"
	annoExcludeOutbound = names.RedirectPrefix + "exclude-outbound-ports"
)

// conf is the plugin's entry in the configuration list, as the runtime
// hands it over.
type conf struct {
	types.PluginConf
	RuntimeConfig struct {
		PodAnnotations map[string]string `json:"io.kubernetes.cri.pod-annotations"`
	} `json:"runtimeConfig"`
}

// Plugin is graft-cni's commands. Apply programs a namespace (the path
// the runtime gives); tests replace it.
type Plugin struct {
	Apply func(netns string, r redirect.Rules) error
}

// New is the plugin as the runtime runs it.
func New() *Plugin { return &Plugin{Apply: redirect.ApplyNetNS} }

// Main runs the plugin's command the runtime asked for (CNI_COMMAND) and
// exits.
func Main() {
	p := New()
	skel.PluginMainFuncs(skel.CNIFuncs{Add: p.Add, Check: p.Check, Del: p.Del},
		version.PluginSupports("0.4.0", "1.0.0", "1.1.0"),
		"graft-cni: redirects an annotated Pod's TCP traffic through its mesh proxy")
}

// Add programs the redirection the Pod's annotations ask for, if any, and
// passes the previous plugin's result on.
func (p *Plugin) Add(args *skel.CmdArgs) error {
	c, err := parseConf(args.StdinData)
	if err != nil {
		return err
	}
	if c.PrevResult == nil {
		return errors.New("graft-cni: no previous result: it must follow the plugin that makes the Pod's network in a configuration list")
	}
	r, ok, err := RulesFor(c.RuntimeConfig.PodAnnotations)
	if err != nil {
		return fmt.Errorf("graft-cni: pod %s: %w", podName(args.Args), err)
	}
	if ok {
		if err := p.Apply(args.Netns, r); err != nil {
			return fmt.Errorf("graft-cni: pod %s: %w", podName(args.Args), err)
		}
	}
	return types.PrintResult(c.PrevResult, c.CNIVersion)
}

// Check has nothing to verify that Add's success did not: the rules live
// and die with the namespace.
func (p *Plugin) Check(args *skel.CmdArgs) error {
	_, err := parseConf(args.StdinData)
	return err
}

// Del has nothing to undo: the rules go with the Pod's namespace.
func (p *Plugin) Del(*skel.CmdArgs) error { return nil }

func parseConf(data []byte) (*conf, error) {
	var c conf
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("graft-cni: network configuration: %w", err)
	}
	if err := version.ParsePrevResult(&c.PluginConf); err != nil {
		return nil, fmt.Errorf("graft-cni: previous result: %w", err)
	}
	return &c, nil
}

// RulesFor reads the redirection a Pod's annotations ask for: ok is false
// when they ask for none (no redirect.graft.dev/mode: cni). A Pod asking
// with malformed values is refused rather than left unredirected, so the
// failure shows in the Pod's events instead of as traffic that silently
// skips the proxy.
func RulesFor(annotations map[string]string) (r redirect.Rules, ok bool, err error) {
	mode, present := annotations[annoMode]
	if !present {
		return r, false, nil
	}
	if mode != "cni" {
		return r, false, fmt.Errorf("%s %q: want cni", annoMode, mode)
	}
	var errs []error
	uid, err := strconv.ParseUint(annotations[annoProxyUID], 10, 32)
	if err != nil {
		errs = append(errs, fmt.Errorf("%s %q: want a uid", annoProxyUID, annotations[annoProxyUID]))
	}
	r.ProxyUID = uint32(uid)
	for _, p := range []struct {
		key string
		dst *uint16
	}{{annoInboundPort, &r.InboundPort}, {annoOutboundPort, &r.OutboundPort}} {
		if *p.dst, err = redirect.ParsePort(annotations[p.key]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.key, err))
		}
	}
	for _, p := range []struct {
		key string
		dst *[]uint16
	}{{annoExcludeInbound, &r.ExcludeInboundPorts}, {annoExcludeOutbound, &r.ExcludeOutboundPorts}} {
		if *p.dst, err = redirect.ParsePorts(annotations[p.key]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.key, err))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, r.Validate())
	}
	if err := errors.Join(errs...); err != nil {
		return redirect.Rules{}, false, err
	}
	return r, true, nil
}

// podName is namespace/name from the CNI_ARGS the runtime passes
// (K8S_POD_NAMESPACE, K8S_POD_NAME), for messages.
func podName(cniArgs string) string {
	var a struct {
		types.CommonArgs
		K8S_POD_NAMESPACE types.UnmarshallableString //nolint:revive // CNI_ARGS names
		K8S_POD_NAME      types.UnmarshallableString //nolint:revive
	}
	a.IgnoreUnknown = true
	if err := types.LoadArgs(cniArgs, &a); err != nil || a.K8S_POD_NAME == "" {
		return "(unnamed)"
	}
	return string(a.K8S_POD_NAMESPACE) + "/" + string(a.K8S_POD_NAME)
}
