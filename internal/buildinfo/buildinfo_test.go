package buildinfo

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFrom(t *testing.T) {
	checkout := &debug.BuildInfo{
		GoVersion: "go1.26.1",
		Main:      debug.Module{Path: "github.com/graftdev/graft", Version: "v0.0.0-20261125172838-fa6831b4e1b3+dirty"},
		Settings: []debug.BuildSetting{
			{Key: "GOOS", Value: "linux"}, {Key: "GOARCH", Value: "amd64"},
			{Key: "vcs.revision", Value: "fa6831b4e1b3c0ffee0000000000000000000000"},
			{Key: "vcs.time", Value: "2026-11-25T17:28:38Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	installed := &debug.BuildInfo{
		GoVersion: "go1.26.1",
		Main:      debug.Module{Path: "github.com/graftdev/graft", Version: "v1.4.0"},
	}
	bare := &debug.BuildInfo{GoVersion: "go1.26.1", Main: debug.Module{Version: "(devel)"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}}}
	tests := []struct {
		name string
		s    Stamped
		bi   *debug.BuildInfo
		want string
	}{
		{"a build in a checkout", Stamped{}, checkout,
			"graft v0.0.0-20261125172838-fa6831b4e1b3+dirty\n  revision: fa6831b4e1b3c0ffee0000000000000000000000 (modified)\n  time:     2026-11-25T17:28:38Z\n  go:       go1.26.1 linux/amd64\n"},
		{"go install of a tagged module", Stamped{}, installed, "graft v1.4.0\n  go:       go1.26.1\n"},
		{"-ldflags win over the toolchain's record", Stamped{Version: "v1.5.0", Revision: "abc", Time: "2026-11-01T00:00:00Z"}, checkout,
			"graft v1.5.0\n  revision: abc\n  time:     2026-11-01T00:00:00Z\n  go:       go1.26.1 linux/amd64\n"},
		{"only -X main.version, as the Dockerfile stamps", Stamped{Version: "v1.5.0"}, installed, "graft v1.5.0\n  go:       go1.26.1\n"},
		{"no version anywhere: devel and the commit", Stamped{}, bare, "graft devel-0123456789ab\n  revision: 0123456789abcdef\n  go:       go1.26.1\n"},
		{"no record at all", Stamped{}, nil, "graft devel\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := From(tt.s, tt.bi).String(); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// The running binary (this test's) has a record: Read finds the toolchain.
func TestRead(t *testing.T) {
	in := Read(Stamped{})
	if in.GoVersion != runtime.Version() {
		t.Errorf("GoVersion %q, want %q", in.GoVersion, runtime.Version())
	}
	if in.Version == "" || strings.Contains(in.String(), "graft dev\n") {
		t.Errorf("version %q", in.Version)
	}
}

// Parse reads back what String writes, field by field.
func TestParseString(t *testing.T) {
	for _, in := range []Info{
		{Version: "v1.2.3", Revision: "0123456789abcdef", Time: "2026-11-25T10:00:00Z", GoVersion: "go1.26.8", Platform: "linux/amd64"},
		{Version: "devel-0123456789ab", Revision: "0123456789abcdef0", Modified: true, GoVersion: "go1.26.8"},
		{Version: "devel"},
	} {
		got, err := Parse(in.String())
		if err != nil || got != in {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in.String(), got, err, in)
		}
	}
	for _, bad := range []string{"", "nginx 1.25\n", "graft v1\n  no colon\n"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}
