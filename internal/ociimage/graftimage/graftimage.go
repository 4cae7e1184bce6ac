// Package graftimage is graft's own container image: what `make images`
// writes and the Dockerfile builds, defined once so the two stay in step
// (deploy/dockerfile_test.go holds the Dockerfile to it).
//
// One static binary at /graft, run as the numeric non-root user 65532
// (runAsNonRoot can verify a number, not a name), with the few files a
// static Go program reads: /etc/passwd and /etc/group naming that user,
// and /tmp. No shell, no package manager, no CA bundle (graft reaches
// the API server with the ServiceAccount's own CA).
package graftimage

import (
	"io/fs"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/graftdev/graft/internal/ociimage"
)

// Repository is where graft's image is published; deploy/base's
// kustomization and the Helm chart name it.
const Repository = "ghcr.io/graftdev/graft"

// The image's run settings.
const (
	Binary = "/graft"
	UID    = 65532
	User   = "65532:65532"
)

// Entrypoint and Cmd: `graft serve` unless the Pod gives args.
var (
	Entrypoint = []string{Binary}
	Cmd        = []string{"serve"}
	// Ports are graft serve's defaults: the webhook and the admin port.
	Ports = []string{"8443/tcp", "8080/tcp"}
	// Labels are the image's static labels (version and revision are
	// annotations of the manifest, set per build).
	Labels = map[string]string{
		ocispec.AnnotationTitle:    "graft",
		ocispec.AnnotationSource:   "https://github.com/graftdev/graft",
		ocispec.AnnotationLicenses: "Apache-2.0",
	}
)

// Files are the image's files, the binary read from binary on disk.
func Files(binary string) []ociimage.File {
	return []ociimage.File{
		{Path: Binary, Mode: 0o755, Source: binary},
		{Path: "/etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{Path: "/etc/group", Mode: 0o644, Data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{Path: "/home/nonroot", Mode: fs.ModeDir | 0o700, UID: UID, GID: UID},
		{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
	}
}

// Config is the image's run configuration.
func Config() ocispec.ImageConfig {
	ports := map[string]struct{}{}
	for _, p := range Ports {
		ports[p] = struct{}{}
	}
	return ocispec.ImageConfig{
		User:         User,
		Entrypoint:   Entrypoint,
		Cmd:          Cmd,
		ExposedPorts: ports,
		Labels:       Labels,
	}
}

// Build describes one platform's graft image, from the binary built for
// it; created is the commit's time, version and revision what the binary
// was stamped with.
func Build(platform ocispec.Platform, binary string, created time.Time, version, revision string) ociimage.Image {
	ann := map[string]string{ocispec.AnnotationCreated: created.UTC().Format(time.RFC3339)}
	if version != "" {
		ann[ocispec.AnnotationVersion] = version
	}
	if revision != "" {
		ann[ocispec.AnnotationRevision] = revision
	}
	return ociimage.Image{
		Platform:    platform,
		Files:       Files(binary),
		Config:      Config(),
		Created:     created,
		Annotations: ann,
	}
}
