// Package buildinfo says which graft is running: what a release build
// stamps with -ldflags, else what the Go toolchain recorded in the binary
// (a `go install` of a tagged module has its version, a build in a git
// checkout its commit), so that no build calls itself just "dev".
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// Info is what is known of a build. Empty fields are unknown.
type Info struct {
	Version   string `json:"version"`             // v1.2.3, a git describe, a Go pseudo-version, or "devel"
	Revision  string `json:"revision,omitempty"`  // the VCS commit
	Time      string `json:"time,omitempty"`      // the commit's time, RFC 3339
	Modified  bool   `json:"modified,omitempty"`  // built from a tree with uncommitted changes
	GoVersion string `json:"goVersion,omitempty"` // the toolchain, go1.26.1
	Platform  string `json:"platform,omitempty"`  // GOOS/GOARCH
}

// Stamped is what the build set with -ldflags -X (empty: not set).
type Stamped struct {
	Version, Revision, Time string
}

// Read returns the running binary's Info: the stamped fields where set,
// the toolchain's record for the rest.
func Read(s Stamped) Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return From(s, bi)
}

// From combines s with the toolchain's record bi (nil if there is none).
func From(s Stamped, bi *debug.BuildInfo) Info {
	var in Info
	if bi != nil {
		in.GoVersion = bi.GoVersion
		// "(devel)" is what a build without a version says: no version.
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			in.Version = v
		}
		var goos, goarch string
		for _, kv := range bi.Settings {
			switch kv.Key {
			case "vcs.revision":
				in.Revision = kv.Value
			case "vcs.time":
				in.Time = kv.Value
			case "vcs.modified":
				in.Modified = kv.Value == "true"
			case "GOOS":
				goos = kv.Value
			case "GOARCH":
				goarch = kv.Value
			}
		}
		if goos != "" && goarch != "" {
			in.Platform = goos + "/" + goarch
		}
	}
	if s.Version != "" {
		in.Version = s.Version
	}
	if s.Revision != "" {
		in.Revision, in.Modified = s.Revision, false
	}
	if s.Time != "" {
		in.Time = s.Time
	}
	if in.Version == "" {
		in.Version = "devel"
		if in.Revision != "" {
			in.Version += "-" + short(in.Revision)
		}
	}
	return in
}

func short(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// String is the multi-line form `graft version` prints.
func (in Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "graft %s\n", in.Version)
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "  %-9s %s\n", k+":", v)
		}
	}
	rev := in.Revision
	if rev != "" && in.Modified {
		rev += " (modified)"
	}
	line("revision", rev)
	line("time", in.Time)
	line("go", strings.TrimSpace(in.GoVersion+" "+in.Platform))
	return b.String()
}

// Parse reads what String writes (what a graft serves on /version), so a
// client can report another graft's build field by field.
func Parse(text string) (Info, error) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	v, ok := strings.CutPrefix(lines[0], "graft ")
	if !ok || v == "" {
		return Info{}, fmt.Errorf("%q: not a graft version", lines[0])
	}
	in := Info{Version: v}
	for _, l := range lines[1:] {
		k, val, ok := strings.Cut(strings.TrimSpace(l), ":")
		if !ok {
			return Info{}, fmt.Errorf("%q: want key: value", l)
		}
		val = strings.TrimSpace(val)
		switch k {
		case "revision":
			in.Revision, in.Modified = strings.CutSuffix(val, " (modified)")
		case "time":
			in.Time = val
		case "go":
			in.GoVersion, in.Platform, _ = strings.Cut(val, " ")
		}
	}
	return in, nil
}
