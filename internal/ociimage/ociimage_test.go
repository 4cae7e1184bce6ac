package ociimage

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

var when = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func testImage(arch string, binary []byte) Image {
	return Image{
		Platform: ocispec.Platform{OS: "linux", Architecture: arch},
		Files: []File{
			{Path: "/usr/bin/prog", Mode: 0o755, Data: binary},
			{Path: "/tmp", Mode: fs.ModeDir | fs.ModeSticky | 0o777},
			{Path: "/home/app", Mode: fs.ModeDir | 0o700, UID: 1000, GID: 1000},
		},
		Config:      ocispec.ImageConfig{User: "1000:1000", Entrypoint: []string{"/usr/bin/prog"}},
		Created:     when,
		Annotations: map[string]string{ocispec.AnnotationVersion: "v1"},
	}
}

// readArchive reads every regular file of an archive by name.
func readArchive(t *testing.T, data []byte) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(when) {
			t.Errorf("%s dated %v, want the image's %v", h.Name, h.ModTime, when)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = b
		}
	}
}

// blob reads the blob d from the archive's files, checking its digest.
func blob(t *testing.T, files map[string][]byte, d ocispec.Descriptor, into any) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+d.Digest.Encoded()]
	if !ok {
		t.Fatalf("blob %s missing", d.Digest)
	}
	if digest.FromBytes(b) != d.Digest || int64(len(b)) != d.Size {
		t.Fatalf("blob %s: content does not match its descriptor", d.Digest)
	}
	if into != nil {
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatalf("blob %s: %v", d.Digest, err)
		}
	}
	return b
}

func TestWriteOnePlatform(t *testing.T) {
	var buf bytes.Buffer
	d, err := Write(&buf, "example.com/app:v1", testImage("amd64", []byte("binary")))
	if err != nil {
		t.Fatal(err)
	}
	files := readArchive(t, buf.Bytes())
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %s", got)
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(index.Manifests))
	}
	top := index.Manifests[0]
	if top.Digest != d || top.MediaType != ocispec.MediaTypeImageManifest {
		t.Errorf("index.json points at %s %s, want the manifest %s Write returned", top.MediaType, top.Digest, d)
	}
	wantAnn := map[string]string{AnnotationContainerdName: "example.com/app:v1", ocispec.AnnotationRefName: "v1"}
	if diff := cmp.Diff(wantAnn, top.Annotations); diff != "" {
		t.Errorf("index.json annotations (-want +got):\n%s", diff)
	}
	var m ocispec.Manifest
	blob(t, files, top, &m)
	if m.Annotations[ocispec.AnnotationVersion] != "v1" || len(m.Layers) != 1 {
		t.Fatalf("manifest %+v: want the image's annotations and one layer", m)
	}
	var cfg ocispec.Image
	blob(t, files, m.Config, &cfg)
	if cfg.Config.User != "1000:1000" || cfg.OS != "linux" || cfg.Architecture != "amd64" || !cfg.Created.Equal(when) {
		t.Errorf("config %+v: want the image's user, platform and date", cfg)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob(t, files, m.Layers[0], nil)))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if got := digest.FromBytes(layer); len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != got {
		t.Errorf("diff_ids %v, want the uncompressed layer's %s", cfg.RootFS.DiffIDs, got)
	}
	// docker load's view of the same archive.
	var dm []dockerManifest
	if err := json.Unmarshal(files["manifest.json"], &dm); err != nil {
		t.Fatal(err)
	}
	want := []dockerManifest{{Config: "blobs/sha256/" + m.Config.Digest.Encoded(), RepoTags: []string{"example.com/app:v1"}, Layers: []string{"blobs/sha256/" + m.Layers[0].Digest.Encoded()}}}
	if diff := cmp.Diff(want, dm); diff != "" {
		t.Errorf("manifest.json (-want +got):\n%s", diff)
	}
}

func TestWriteSeveralPlatforms(t *testing.T) {
	var buf bytes.Buffer
	d, err := Write(&buf, "example.com/app:v1", testImage("amd64", []byte("x86")), testImage("arm64", []byte("arm")))
	if err != nil {
		t.Fatal(err)
	}
	files := readArchive(t, buf.Bytes())
	if _, ok := files["manifest.json"]; ok {
		t.Error("a multi-platform archive carries docker's manifest.json, which names one image per tag")
	}
	var index ocispec.Index
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	top := index.Manifests[0]
	if top.MediaType != ocispec.MediaTypeImageIndex || top.Digest != d {
		t.Fatalf("index.json points at %s %s, want an image index %s", top.MediaType, top.Digest, d)
	}
	var idx ocispec.Index
	blob(t, files, top, &idx)
	var archs []string
	for _, m := range idx.Manifests {
		archs = append(archs, m.Platform.Architecture)
		var man ocispec.Manifest
		blob(t, files, m, &man)
	}
	if diff := cmp.Diff([]string{"amd64", "arm64"}, archs); diff != "" {
		t.Errorf("platforms (-want +got):\n%s", diff)
	}
}

// TestWriteReproducible: the same input gives the same bytes, and any
// change to a file changes the digest.
func TestWriteReproducible(t *testing.T) {
	write := func(img Image) ([]byte, digest.Digest) {
		var buf bytes.Buffer
		d, err := Write(&buf, "example.com/app:v1", img)
		if err != nil {
			t.Fatal(err)
		}
		return buf.Bytes(), d
	}
	a, da := write(testImage("amd64", []byte("binary")))
	b, db := write(testImage("amd64", []byte("binary")))
	if da != db || !bytes.Equal(a, b) {
		t.Errorf("two writes of one image differ: %s, %s", da, db)
	}
	_, dc := write(testImage("amd64", []byte("binarY")))
	if dc == da {
		t.Error("a changed file kept the digest")
	}
	img := testImage("amd64", []byte("binary"))
	img.Files[0], img.Files[2] = img.Files[2], img.Files[0]
	if _, dd := write(img); dd != da {
		t.Error("listing the files in another order changed the digest")
	}
}

func TestLayer(t *testing.T) {
	layer, err := Layer(testImage("amd64", []byte("binary")).Files, when)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		Name     string
		Mode     int64
		UID, GID int
		Uname    string
	}
	var got []entry
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, entry{h.Name, h.Mode, h.Uid, h.Gid, h.Uname})
	}
	want := []entry{
		{Name: "home/", Mode: 0o755},
		{Name: "home/app/", Mode: 0o700, UID: 1000, GID: 1000},
		{Name: "tmp/", Mode: 0o1777},
		{Name: "usr/", Mode: 0o755},
		{Name: "usr/bin/", Mode: 0o755},
		{Name: "usr/bin/prog", Mode: 0o755},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}
}

func TestLayerRefuses(t *testing.T) {
	for name, files := range map[string][]File{
		"relative":      {{Path: "etc/passwd", Mode: 0o644}},
		"root":          {{Path: "/", Mode: fs.ModeDir | 0o755}},
		"twice":         {{Path: "/a", Mode: 0o644}, {Path: "/a/", Mode: 0o644}},
		"under a file":  {{Path: "/a", Mode: 0o644}, {Path: "/a/b", Mode: 0o644}},
		"symlink":       {{Path: "/a", Mode: fs.ModeSymlink | 0o777}},
		"missing input": {{Path: "/a", Mode: 0o644, Source: "/nonexistent/graft"}},
	} {
		if _, err := Layer(files, when); err == nil {
			t.Errorf("%s: Layer accepted %+v", name, files)
		}
	}
	if _, err := Write(io.Discard, "no-tag", testImage("amd64", nil)); err == nil {
		t.Error("Write accepted a reference without a tag")
	}
	if _, err := Write(io.Discard, "example.com/app:v1"); err == nil {
		t.Error("Write accepted no image")
	}
}

// TestWriteTree: the directory holds what the layer would unpack to.
func TestWriteTree(t *testing.T) {
	dir := t.TempDir()
	if err := WriteTree(dir, testImage("amd64", []byte("binary")).Files); err != nil {
		t.Fatal(err)
	}
	got := map[string]fs.FileMode{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		got[rel] = info.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]fs.FileMode{
		"home": fs.ModeDir | 0o755, "home/app": fs.ModeDir | 0o700,
		"tmp": fs.ModeDir | fs.ModeSticky | 0o777,
		"usr": fs.ModeDir | 0o755, "usr/bin": fs.ModeDir | 0o755, "usr/bin/prog": 0o755,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "usr/bin/prog")); err != nil || string(b) != "binary" {
		t.Errorf("usr/bin/prog = %q, %v", b, err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.tar")
	d, err := WriteFile(path, "example.com/app:v1", testImage("amd64", []byte("binary")))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readArchive(t, data)["index.json"]), d.String()) {
		t.Errorf("index.json does not name %s", d)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".ociimage-*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
