package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cri dials the node's containerd's CRI service, as the kubelet does.
func (n *Node) cri() (runtimeapi.RuntimeServiceClient, func() error, error) {
	conn, err := grpc.NewClient("unix://"+n.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, fmt.Errorf("node %s: CRI: %w", n.Name, err)
	}
	return runtimeapi.NewRuntimeServiceClient(conn), conn.Close, nil
}

// removeSandboxes stops and removes every Pod sandbox, as the kubelet
// does for a deleted Pod: containerd kills the containers, runs the CNI
// plugins' DEL (the veth and the address go) and unmounts their roots.
func (n *Node) removeSandboxes(ctx context.Context) error {
	rs, done, err := n.cri()
	if err != nil {
		return err
	}
	defer done()
	list, err := rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("node %s: list sandboxes: %w", n.Name, err)
	}
	var errs []error
	for _, sb := range list.Items {
		if _, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s: %w", sb.Metadata.GetName(), err))
			continue
		}
		if _, err := rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id}); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", sb.Metadata.GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// Memory is a container's memory as the kubelet and the kernel see it.
type Memory struct {
	// WorkingSet is what the kubelet reports and evicts by (the cgroup's
	// usage less its inactive file pages), from the CRI's stats.
	WorkingSet uint64
	// RSS is the container's main process's resident set (VmRSS).
	RSS uint64
}

// ContainerMemory returns the memory of the container with the CRI id
// (a Pod status's containerID without its "containerd://").
func (n *Node) ContainerMemory(ctx context.Context, id string) (Memory, error) {
	id = strings.TrimPrefix(id, "containerd://")
	rs, done, err := n.cri()
	if err != nil {
		return Memory{}, err
	}
	defer done()
	var m Memory
	st, err := rs.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil {
		return m, fmt.Errorf("container %s: stats: %w", id, err)
	}
	if ws := st.GetStats().GetMemory().GetWorkingSetBytes(); ws != nil {
		m.WorkingSet = ws.Value
	}
	pid, err := n.containerPid(ctx, rs, id)
	if err != nil {
		return m, err
	}
	if m.RSS, err = vmRSS(pid); err != nil {
		return m, err
	}
	return m, nil
}

// ContainerPid is the process id of the container's main process (CRI
// id, with or without "containerd://").
func (n *Node) ContainerPid(ctx context.Context, id string) (int, error) {
	rs, done, err := n.cri()
	if err != nil {
		return 0, err
	}
	defer done()
	return n.containerPid(ctx, rs, strings.TrimPrefix(id, "containerd://"))
}

// containerPid is the container's main process, from containerd's
// verbose status.
func (n *Node) containerPid(ctx context.Context, rs runtimeapi.RuntimeServiceClient, id string) (int, error) {
	st, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		return 0, fmt.Errorf("container %s: status: %w", id, err)
	}
	var info struct {
		Pid int `json:"pid"`
	}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil || info.Pid == 0 {
		return 0, fmt.Errorf("container %s: no pid in its verbose status (%v)", id, err)
	}
	return info.Pid, nil
}

// vmRSS reads a process's resident set in bytes.
func vmRSS(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: VmRSS %q", pid, rest)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}
