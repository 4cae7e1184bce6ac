package deploy

import (
	"archive/tar"
	"bufio"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/graftdev/graft/internal/ociimage"
	"github.com/graftdev/graft/internal/ociimage/graftimage"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd  string // upper case: FROM, RUN, ...
	args string
	line int
}

// stage is a FROM and the instructions up to the next one.
type stage struct {
	from string
	body []instruction
}

type dockerfile struct {
	args   map[string]string // ARG defaults, global and per stage
	stages []stage
}

// parseDockerfile reads the subset of the Dockerfile syntax graft's file
// uses: instructions, `\` continuations and # comments.
func parseDockerfile(data []byte) (*dockerfile, error) {
	df := &dockerfile{args: map[string]string{}}
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "#") || (line == "" && cur.Len() == 0) {
			continue // comments, even inside a continuation, are dropped
		}
		if cur.Len() == 0 {
			start = n
		}
		if body, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(body)
			cur.WriteString(" ")
			continue
		}
		cur.WriteString(line)
		text := cur.String()
		cur.Reset()
		cmd, args, _ := strings.Cut(text, " ")
		in := instruction{cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args), line: start}
		switch in.cmd {
		case "FROM":
			df.stages = append(df.stages, stage{from: in.args})
		case "ARG":
			name, def, _ := strings.Cut(in.args, "=")
			if _, seen := df.args[name]; !seen || def != "" {
				df.args[name] = def
			}
		}
		if in.cmd != "FROM" && len(df.stages) > 0 {
			s := &df.stages[len(df.stages)-1]
			s.body = append(s.body, in)
		}
	}
	if cur.Len() > 0 {
		return nil, fmt.Errorf("line %d: continuation at end of file", start)
	}
	if len(df.stages) == 0 {
		return nil, fmt.Errorf("no FROM")
	}
	return df, sc.Err()
}

// runCommand strips RUN's own --flags (cache mounts) from a shell-form RUN.
func runCommand(args string) string {
	for strings.HasPrefix(args, "--") {
		_, args, _ = strings.Cut(args, " ")
		args = strings.TrimSpace(args)
	}
	return args
}

func readDockerfile(t *testing.T) *dockerfile {
	t.Helper()
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df, err := parseDockerfile(data)
	if err != nil {
		t.Fatalf("Dockerfile: %v", err)
	}
	return df
}

const (
	builtBinary = "/out/graft"
	builtRootfs = "/out/rootfs"
)

// TestDockerfileFinalStage: the Dockerfile's image is graftimage's, the one
// make images writes: from scratch, the files graft-image rootfs lays out
// (the same as make images's layer), and graftimage's user, entrypoint,
// command, ports and labels.
func TestDockerfileFinalStage(t *testing.T) {
	df := readDockerfile(t)
	if len(df.stages) < 2 {
		t.Fatalf("%d stages, want a build stage and a runtime stage", len(df.stages))
	}
	final := df.stages[len(df.stages)-1]
	if final.from != "scratch" {
		t.Errorf("final stage FROM %q, want scratch: every file comes from graftimage", final.from)
	}
	var user, entrypoint, cmd, copied string
	var ports []string
	labels := map[string]string{}
	for _, in := range final.body {
		switch in.cmd {
		case "RUN":
			t.Errorf("line %d: RUN in the final stage, which has no shell", in.line)
		case "USER":
			user = in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "CMD":
			cmd = in.args
		case "EXPOSE":
			ports = append(ports, strings.Fields(in.args)...)
		case "LABEL":
			for _, m := range labelRE.FindAllStringSubmatch(in.args, -1) {
				labels[m[1]] = m[2]
			}
		case "COPY":
			if f := strings.Fields(in.args); len(f) == 3 && f[0] == "--from=build" && f[2] == "/" {
				copied = f[1]
			}
		default:
			t.Errorf("line %d: %s in the final stage, which graftimage does not have", in.line, in.cmd)
		}
	}
	if user != graftimage.User {
		t.Errorf("USER %q, want graftimage's %q", user, graftimage.User)
	}
	for name, got := range map[string]string{"ENTRYPOINT": entrypoint, "CMD": cmd} {
		want := graftimage.Entrypoint
		if name == "CMD" {
			want = graftimage.Cmd
		}
		var argv []string
		if err := json.Unmarshal([]byte(got), &argv); err != nil {
			t.Errorf("%s %q: want the exec (JSON) form, which needs no shell", name, got)
		} else if !slices.Equal(argv, want) {
			t.Errorf("%s %q, want graftimage's %q", name, argv, want)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(ports)), slices.Sorted(slices.Values(graftimage.Ports))) {
		t.Errorf("EXPOSE %v, want graftimage's %v", ports, graftimage.Ports)
	}
	if !maps.Equal(labels, graftimage.Labels) {
		t.Errorf("LABEL %v, want graftimage's %v", labels, graftimage.Labels)
	}
	if copied != builtRootfs+"/" {
		t.Errorf("the final stage copies %q to /, want the build's %s/", copied, builtRootfs)
	}
}

var labelRE = regexp.MustCompile(`(\S+)="([^"]*)"`)

// TestDockerfileRootfs runs the build stage's graft-image rootfs command
// as written (the binary a stand-in) and checks the tree it lays out is
// graftimage's files, as make images's layer holds them.
func TestDockerfileRootfs(t *testing.T) {
	df := readDockerfile(t)
	var rootfs string
	for _, in := range df.stages[0].body {
		if in.cmd == "RUN" && strings.Contains(in.args, "graft-image rootfs") {
			rootfs = runCommand(in.args)
		}
	}
	if !strings.Contains(rootfs, "--binary "+builtBinary) || !strings.Contains(rootfs, "--out "+builtRootfs) {
		t.Fatalf("build stage: rootfs command %q, want --binary %s --out %s", rootfs, builtBinary, builtRootfs)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "graft")
	if err := os.WriteFile(bin, []byte("stand-in binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "rootfs")
	cmdline := strings.NewReplacer(" "+builtBinary, " '"+bin+"'", " "+builtRootfs, " '"+out+"'").Replace(rootfs)
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, b)
	}
	var got []string
	err := filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == out {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(out, p)
		got = append(got, fmt.Sprintf("/%s %v", rel, info.Mode()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	layer, err := ociimage.Layer(graftimage.Files(bin), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("/%s %v", strings.TrimSuffix(h.Name, "/"), h.FileInfo().Mode()))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the Dockerfile's rootfs:\n%s\nmake images's layer:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDockerfileGoVersion: the build image's Go is not older than go.mod's.
func TestDockerfileGoVersion(t *testing.T) {
	df := readDockerfile(t)
	data, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	goMod := string(m[1])
	image := df.args["GO_VERSION"]
	if !strings.Contains(df.stages[0].from, "golang:${GO_VERSION}") || image == "" {
		t.Fatalf("build stage FROM %q, ARG GO_VERSION=%q: want golang:${GO_VERSION} with a default", df.stages[0].from, image)
	}
	if semverCompare(image, goMod) < 0 && !strings.HasPrefix(goMod, image+".") {
		t.Errorf("image Go %s is older than go.mod's go %s", image, goMod)
	}
}

// semverCompare compares dotted numeric versions ("1.26" < "1.26.1").
func semverCompare(a, b string) int {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) || i < len(bs); i++ {
		var x, y int
		if i < len(as) {
			fmt.Sscan(as[i], &x)
		}
		if i < len(bs) {
			fmt.Sscan(bs[i], &y)
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}

// buildAsDockerfile runs the Dockerfile's `go build` exactly as written
// (through sh, with its ARGs in the environment, as RUN does), only writing
// the binary to out, and with VERSION set to version.
func buildAsDockerfile(t *testing.T, out, version string) {
	t.Helper()
	df := readDockerfile(t)
	var build string
	for _, in := range df.stages[0].body {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			if build != "" {
				t.Fatalf("line %d: a second go build", in.line)
			}
			build = runCommand(in.args)
		}
	}
	if strings.Count(build, " -o "+builtBinary+" ") != 1 {
		t.Fatalf("build command %q: want exactly one -o %s", build, builtBinary)
	}
	cmdline := strings.Replace(build, " -o "+builtBinary+" ", " -o '"+out+"' ", 1)
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Dir = ".." // WORKDIR /src holds the repository (COPY . .)
	cmd.Env = os.Environ()
	for name, def := range df.args {
		cmd.Env = append(cmd.Env, name+"="+def)
	}
	cmd.Env = append(cmd.Env, "TARGETOS="+runtime.GOOS, "TARGETARCH="+runtime.GOARCH, "VERSION="+version)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cmdline, err, b)
	}
}

// TestDockerfileBuildCommand builds with the Dockerfile's command and
// checks the binary is static and carries the version.
func TestDockerfileBuildCommand(t *testing.T) {
	const version = "v0.0.0-dockerfile-test"
	out := filepath.Join(t.TempDir(), "graft")
	buildAsDockerfile(t, out, version)

	if runtime.GOOS == "linux" {
		checkStatic(t, out)
	}
	info, err := buildinfo.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings %v: want CGO_ENABLED=0 and -trimpath", settings)
	}
	got, err := exec.Command(out, "version").Output()
	if err != nil {
		t.Fatalf("graft version: %v", err)
	}
	// The first line is the version; build details follow.
	if first, _, _ := strings.Cut(string(got), "\n"); first != "graft "+version {
		t.Errorf("graft version = %q, want the VERSION build arg %q first", got, version)
	}
}

// checkStatic fails unless the ELF binary at path is statically linked.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (%v): it would not run on distroless/static", p.Type)
		}
	}
}
