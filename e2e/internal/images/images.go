// Package images builds container images from Go main packages for the
// harness's real nodes, without Docker or a registry: each binary built
// static for this machine's architecture, the image written as an OCI
// layout archive (graft's internal/ociimage, the writer of `make images`)
// that a node imports into containerd.
package images

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/graftdev/graft/internal/ociimage"
)

// Binary is a Go main package built into an image.
type Binary struct {
	// Package is the main package, an import path or a ./path relative to
	// Dir.
	Package string
	// Dir is where `go build` runs: a directory of the module that holds
	// Package (empty: the current directory).
	Dir string
	// Path is where the binary goes in the image, e.g. /usr/local/bin/envoy.
	Path string
}

// Spec is an image: binaries and its run settings.
type Spec struct {
	// Name is the image's reference, registry/repository:tag, exactly as
	// Pod specs name it.
	Name     string
	Binaries []Binary
	// Entrypoint defaults to the first binary.
	Entrypoint, Cmd []string
	// User is numeric (uid:gid), so runAsNonRoot can check it; empty is
	// root.
	User string
	// Env defaults to a PATH of the usual directories.
	Env []string
	// Files are added as they are (an /etc/passwd, say).
	Files []ociimage.File
}

// GoImage builds the Go main package pkg into an image named name, the
// binary at /usr/local/bin/<last element of pkg> and its entrypoint; it
// returns the archive's path under dir.
func GoImage(ctx context.Context, dir, pkg, name string) (string, error) {
	return Build(ctx, dir, Spec{Name: name, Binaries: []Binary{{Package: pkg, Path: "/usr/local/bin/" + filepath.Base(pkg)}}})
}

// Build builds s's binaries and writes s as an archive under dir, named
// for the image, and returns its path.
func Build(ctx context.Context, dir string, s Spec) (string, error) {
	if len(s.Binaries) == 0 {
		return "", fmt.Errorf("%s: no binary", s.Name)
	}
	work, err := os.MkdirTemp(dir, "image-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(work)
	files := append([]ociimage.File(nil), s.Files...)
	for i, b := range s.Binaries {
		out := filepath.Join(work, fmt.Sprintf("bin-%d", i))
		if err := GoBuild(ctx, b.Dir, b.Package, out); err != nil {
			return "", fmt.Errorf("%s: %w", s.Name, err)
		}
		files = append(files, ociimage.File{Path: b.Path, Mode: 0o755, Source: out})
	}
	entry := s.Entrypoint
	if entry == nil {
		entry = []string{s.Binaries[0].Path}
	}
	env := s.Env
	if env == nil {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	// Pods write to /tmp even with a read-only root (an emptyDir there);
	// give it the usual mode either way.
	if !hasPath(files, "/tmp") {
		files = append(files, ociimage.File{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777})
	}
	img := ociimage.Image{
		Platform: ocispec.Platform{OS: "linux", Architecture: runtime.GOARCH},
		Files:    files,
		Config:   ocispec.ImageConfig{User: s.User, Entrypoint: entry, Cmd: s.Cmd, Env: env},
		// A fixed date: the image changes only when its binaries do.
		Created: time.Unix(0, 0).UTC(),
	}
	path := filepath.Join(dir, ArchiveName(s.Name))
	if _, err := ociimage.WriteFile(path, s.Name, img); err != nil {
		return "", fmt.Errorf("%s: %w", s.Name, err)
	}
	return path, nil
}

// ArchiveName is the file name Build gives the archive of the image ref.
func ArchiveName(ref string) string {
	r := strings.NewReplacer("/", "_", ":", "_", "@", "_")
	return r.Replace(ref) + ".tar"
}

func hasPath(files []ociimage.File, p string) bool {
	for _, f := range files {
		if filepath.Clean(f.Path) == p {
			return true
		}
	}
	return false
}

// GoBuild builds the main package pkg static for linux on this machine's
// architecture into out, running in dir.
func GoBuild(ctx context.Context, dir, pkg, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, pkg)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+runtime.GOARCH)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	if _, err := os.Stat(out); err != nil {
		return errors.Join(fmt.Errorf("go build %s wrote nothing", pkg), err)
	}
	return nil
}
