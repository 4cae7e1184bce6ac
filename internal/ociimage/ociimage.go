// Package ociimage writes container images without a daemon or a
// registry: each platform's image is one layer of given files and an OCI
// config, and the images are written as an OCI image layout tarred into
// one archive, which `ctr images import` loads, `skopeo copy
// oci-archive:...` pushes, and a single-platform one `docker load` reads
// too (it carries Docker's manifest.json beside the layout).
//
// The output is a function of the input only: entries sorted, times set
// from the caller's Created, owners numeric, no host names or user names,
// gzip without a timestamp. The same files give the same digest, with the
// same Go toolchain (compress/flate's output is not promised across
// versions).
package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	// go-digest computes sha256 through crypto.SHA256, which needs the
	// implementation linked in.
	_ "crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// File is one entry of an image's layer. Directories a path needs are
// added (root's, 0755) unless listed.
type File struct {
	// Path is absolute, as the container sees it: /graft, /etc/passwd.
	Path string
	// Mode holds the permission bits (and fs.ModeSticky, fs.ModeSetuid...);
	// fs.ModeDir makes a directory, which has no contents.
	Mode     fs.FileMode
	UID, GID int
	// Data is a regular file's contents, unless Source names a file on
	// disk to copy them from.
	Data   []byte
	Source string
}

// Image is one platform's image.
type Image struct {
	Platform ocispec.Platform
	Files    []File
	Config   ocispec.ImageConfig
	// Created dates the image and every entry of its layer: set it from
	// the source (a commit's time), not the clock, to stay reproducible.
	Created time.Time
	// Annotations go on its manifest.
	Annotations map[string]string
}

// Names are how the archive names its image: containerd's and the OCI
// layout's annotations take the full reference (registry/repo:tag).
const (
	AnnotationContainerdName = "io.containerd.image.name"
)

// Write writes images as an OCI layout archive to w, naming the image ref
// (registry/repository:tag), and returns the digest of what ref points at:
// the single image's manifest, or an image index of several platforms.
// That digest is what a registry reports after a push and what
// `image@sha256:...` pins.
func Write(w io.Writer, ref string, images ...Image) (digest.Digest, error) {
	if len(images) == 0 {
		return "", errors.New("no image")
	}
	if ref == "" || !strings.Contains(ref, ":") {
		return "", fmt.Errorf("reference %q: want registry/repository:tag", ref)
	}
	b := &blobs{}
	var manifests []ocispec.Descriptor
	var dockerEntries []dockerManifest
	var created time.Time
	for _, img := range images {
		desc, dm, err := b.addImage(img)
		if err != nil {
			return "", fmt.Errorf("%s %s: %w", ref, platformString(img.Platform), err)
		}
		manifests = append(manifests, desc)
		dm.RepoTags = []string{ref}
		dockerEntries = append(dockerEntries, dm)
		if img.Created.After(created) {
			created = img.Created
		}
	}
	top := manifests[0]
	if len(images) > 1 {
		idx := ocispec.Index{
			Versioned: specs.Versioned{SchemaVersion: 2},
			MediaType: ocispec.MediaTypeImageIndex,
			Manifests: manifests,
		}
		var err error
		if top, err = b.addJSON(ocispec.MediaTypeImageIndex, idx); err != nil {
			return "", err
		}
		top.Platform = nil
	}
	top.Annotations = map[string]string{
		AnnotationContainerdName:  ref,
		ocispec.AnnotationRefName: ref[strings.LastIndex(ref, ":")+1:],
	}
	layout, err := json.Marshal(ocispec.ImageLayout{Version: ocispec.ImageLayoutVersion})
	if err != nil {
		return "", err
	}
	index, err := json.Marshal(ocispec.Index{
		Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageIndex,
		Manifests: []ocispec.Descriptor{top},
	})
	if err != nil {
		return "", err
	}
	entries := []archiveEntry{
		{name: ocispec.ImageLayoutFile, data: layout},
		{name: ocispec.ImageIndexFile, data: index},
	}
	// docker load reads manifest.json, and only one image per reference.
	if len(images) == 1 {
		dm, err := json.Marshal(dockerEntries)
		if err != nil {
			return "", err
		}
		entries = append(entries, archiveEntry{name: "manifest.json", data: dm})
	}
	entries = append(entries, archiveEntry{name: "blobs/", dir: true}, archiveEntry{name: "blobs/sha256/", dir: true})
	for _, d := range b.order {
		entries = append(entries, archiveEntry{name: blobPath(d), data: b.data[d]})
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), ModTime: created, Typeflag: tar.TypeReg, Format: tar.FormatPAX}
		if e.dir {
			h.Mode, h.Size, h.Typeflag = 0o755, 0, tar.TypeDir
		}
		if err := tw.WriteHeader(h); err != nil {
			return "", err
		}
		if _, err := tw.Write(e.data); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	return top.Digest, nil
}

// WriteFile writes the archive to path through a temporary file renamed
// into place, so a reader never sees half an archive.
func WriteFile(path, ref string, images ...Image) (digest.Digest, error) {
	tmp, err := os.CreateTemp(pathDir(path), ".ociimage-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	d, err := Write(tmp, ref, images...)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", err
	}
	return d, os.Rename(tmp.Name(), path)
}

func pathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i+1]
	}
	return "."
}

type archiveEntry struct {
	name string
	data []byte
	dir  bool
}

// dockerManifest is one entry of Docker's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// blobs are the content-addressed files of the layout, in the order added.
type blobs struct {
	data  map[digest.Digest][]byte
	order []digest.Digest
}

func (b *blobs) add(mediaType string, data []byte) ocispec.Descriptor {
	d := digest.FromBytes(data)
	if b.data == nil {
		b.data = map[digest.Digest][]byte{}
	}
	if _, ok := b.data[d]; !ok {
		b.data[d] = data
		b.order = append(b.order, d)
	}
	return ocispec.Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(data))}
}

func (b *blobs) addJSON(mediaType string, v any) (ocispec.Descriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return ocispec.Descriptor{}, err
	}
	return b.add(mediaType, data), nil
}

// addImage adds an image's layer, config and manifest, and returns the
// manifest's descriptor and the image's entry in Docker's manifest.json.
func (b *blobs) addImage(img Image) (ocispec.Descriptor, dockerManifest, error) {
	if img.Platform.OS == "" || img.Platform.Architecture == "" {
		return ocispec.Descriptor{}, dockerManifest{}, errors.New("no platform")
	}
	layerTar, err := Layer(img.Files, img.Created)
	if err != nil {
		return ocispec.Descriptor{}, dockerManifest{}, err
	}
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	if err != nil {
		return ocispec.Descriptor{}, dockerManifest{}, err
	}
	if _, err := zw.Write(layerTar); err != nil {
		return ocispec.Descriptor{}, dockerManifest{}, err
	}
	if err := zw.Close(); err != nil {
		return ocispec.Descriptor{}, dockerManifest{}, err
	}
	layer := b.add(ocispec.MediaTypeImageLayerGzip, gz.Bytes())
	created := img.Created.UTC()
	config := ocispec.Image{
		Created:  &created,
		Platform: img.Platform,
		Config:   img.Config,
		RootFS:   ocispec.RootFS{Type: "layers", DiffIDs: []digest.Digest{digest.FromBytes(layerTar)}},
		History:  []ocispec.History{{Created: &created, CreatedBy: "ociimage: one layer of " + fmt.Sprint(len(img.Files)) + " files"}},
	}
	cfg, err := b.addJSON(ocispec.MediaTypeImageConfig, config)
	if err != nil {
		return ocispec.Descriptor{}, dockerManifest{}, err
	}
	manifest := ocispec.Manifest{
		Versioned:   specs.Versioned{SchemaVersion: 2},
		MediaType:   ocispec.MediaTypeImageManifest,
		Config:      cfg,
		Layers:      []ocispec.Descriptor{layer},
		Annotations: img.Annotations,
	}
	desc, err := b.addJSON(ocispec.MediaTypeImageManifest, manifest)
	if err != nil {
		return ocispec.Descriptor{}, dockerManifest{}, err
	}
	p := img.Platform
	desc.Platform = &p
	return desc, dockerManifest{Config: blobPath(cfg.Digest), Layers: []string{blobPath(layer.Digest)}}, nil
}

func blobPath(d digest.Digest) string {
	return "blobs/" + d.Algorithm().String() + "/" + d.Encoded()
}

func platformString(p ocispec.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// Layer returns the uncompressed tar of files: sorted by path, every
// parent directory present, each entry dated modTime and owned by its
// numeric ids only.
func Layer(files []File, modTime time.Time) ([]byte, error) {
	byPath := map[string]File{}
	for _, f := range files {
		p := path.Clean(f.Path)
		if !path.IsAbs(f.Path) || p == "/" {
			return nil, fmt.Errorf("path %q: want an absolute path below /", f.Path)
		}
		if _, dup := byPath[p]; dup {
			return nil, fmt.Errorf("path %s: listed twice", p)
		}
		f.Path = p
		byPath[p] = f
	}
	for p := range byPath {
		for dir := path.Dir(p); dir != "/"; dir = path.Dir(dir) {
			if f, ok := byPath[dir]; ok {
				if !f.Mode.IsDir() {
					return nil, fmt.Errorf("%s is a file, and %s is under it", dir, p)
				}
				continue
			}
			byPath[dir] = File{Path: dir, Mode: fs.ModeDir | 0o755}
		}
	}
	paths := make([]string, 0, len(byPath))
	for p := range byPath {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range paths {
		f := byPath[p]
		name := strings.TrimPrefix(p, "/")
		h := &tar.Header{
			Name:    name,
			Mode:    int64(f.Mode.Perm()) | tarModeBits(f.Mode),
			Uid:     f.UID,
			Gid:     f.GID,
			ModTime: modTime,
			Format:  tar.FormatPAX,
		}
		var data []byte
		if f.Mode.IsDir() {
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
		} else {
			if !f.Mode.IsRegular() {
				return nil, fmt.Errorf("%s: only regular files and directories", p)
			}
			data = f.Data
			if f.Source != "" {
				var err error
				if data, err = os.ReadFile(f.Source); err != nil {
					return nil, err
				}
			}
			h.Typeflag, h.Size = tar.TypeReg, int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if _, err := tw.Write(data); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarModeBits are the set-id and sticky bits as tar's mode field holds them.
func tarModeBits(m fs.FileMode) int64 {
	var bits int64
	if m&fs.ModeSetuid != 0 {
		bits |= 0o4000
	}
	if m&fs.ModeSetgid != 0 {
		bits |= 0o2000
	}
	if m&fs.ModeSticky != 0 {
		bits |= 0o1000
	}
	return bits
}

// WriteTree writes files under dir as the layer would unpack them, for a
// build that copies a directory instead (the Dockerfile's final stage).
// Owners are set only when running as root.
func WriteTree(dir string, files []File) error {
	layer, err := Layer(files, time.Unix(0, 0))
	if err != nil {
		return err
	}
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		target := dir + "/" + strings.TrimSuffix(h.Name, "/")
		mode := fs.FileMode(h.Mode).Perm()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		default:
			data, err := io.ReadAll(tr)
			if err != nil {
				return err
			}
			if err := os.WriteFile(target, data, mode); err != nil {
				return err
			}
		}
		// Chmod after creation: the umask does not apply, and the sticky
		// bit of /tmp survives.
		if err := os.Chmod(target, fs.FileMode(h.Mode).Perm()|stickyBits(h.Mode)); err != nil {
			return err
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
				return err
			}
		}
	}
}

func stickyBits(mode int64) fs.FileMode {
	var m fs.FileMode
	if mode&0o4000 != 0 {
		m |= fs.ModeSetuid
	}
	if mode&0o2000 != 0 {
		m |= fs.ModeSetgid
	}
	if mode&0o1000 != 0 {
		m |= fs.ModeSticky
	}
	return m
}
