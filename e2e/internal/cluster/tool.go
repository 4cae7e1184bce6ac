package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// StartTool starts a cluster and graft for the load-test command name,
// from the environment `make` sets, changed by edit if it is not nil
// (returned as opts, opts.Dir the fresh directory under TempRoot it
// made). The caller defers finish with its named error: it stops the
// cluster and removes the directory, or, when the command failed (or
// opts.KeepLogs), prints the processes' last logs and keeps them (not
// etcd's data, tens of MB).
func StartTool(ctx context.Context, name string, stderr io.Writer, edit func(*Options)) (c *Cluster, opts Options, finish func(errp *error), err error) {
	return startTool(ctx, name, stderr, edit, Start)
}

// StartToolControlPlane is StartTool without graft, for a command that
// runs graft its own way (ServeGraft), or not at all; apiserverArgs are
// added to kube-apiserver's flags.
func StartToolControlPlane(ctx context.Context, name string, stderr io.Writer, edit func(*Options), apiserverArgs ...string) (c *Cluster, opts Options, finish func(errp *error), err error) {
	return startTool(ctx, name, stderr, edit, func(ctx context.Context, o Options) (*Cluster, error) {
		return StartControlPlane(ctx, o, apiserverArgs...)
	})
}

func startTool(ctx context.Context, name string, stderr io.Writer, edit func(*Options), start func(context.Context, Options) (*Cluster, error)) (c *Cluster, opts Options, finish func(errp *error), err error) {
	if opts, err = OptionsFromEnv(); err != nil {
		return nil, opts, nil, err
	}
	if edit != nil {
		edit(&opts)
	}
	if opts.Dir, err = os.MkdirTemp(TempRoot(), "graft-"+name+"-"); err != nil {
		return nil, opts, nil, err
	}
	fmt.Fprintf(stderr, "%s: starting a cluster (%d simulated nodes) on 127.0.0.1; logs in %s\n", name, opts.Nodes, opts.Dir)
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c, err = start(startCtx, opts)
	finish = func(errp *error) {
		if *errp != nil && c != nil {
			fmt.Fprint(stderr, c.Logs(8<<10))
		}
		if c != nil {
			if serr := c.Stop(); serr != nil && *errp == nil {
				*errp = serr
			}
		}
		if *errp == nil && !opts.KeepLogs {
			os.RemoveAll(opts.Dir)
			return
		}
		os.RemoveAll(filepath.Join(opts.Dir, "etcd-data"))
		fmt.Fprintf(stderr, "%s: logs kept in %s\n", name, opts.Dir)
	}
	if err != nil {
		finish(&err)
		return nil, opts, nil, err
	}
	return c, opts, finish, nil
}
