package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// allocArg makes the test binary a child that touches allocMiB of memory
// and exits: a process of known peak RSS.
const (
	allocArg = "-alloc-and-exit"
	allocMiB = 64
)

func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == measuredArg:
		os.Exit(runMeasured(os.Args[2:]))
	case len(os.Args) > 1 && os.Args[1] == allocArg:
		touch(allocMiB)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// touch allocates mib MiB and writes every page, so it is resident.
func touch(mib int) []byte {
	b := make([]byte, mib<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	return b
}

// The child's peak is its own, not the parent's: this process holds far
// more than the child ever does when it starts the child, as auditload
// does after creating a fleet.
func TestRunMeasuredChargesTheChildAlone(t *testing.T) {
	ballast := touch(4 * allocMiB)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "peak")
	if out, err := exec.Command(self, measuredArg, file, self, allocArg).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	kib, err := readPeak(file)
	if err != nil {
		t.Fatal(err)
	}
	if mib := kib >> 10; mib < allocMiB || mib >= 2*allocMiB {
		t.Errorf("child's peak RSS %d MiB, want its own %d MiB and a runtime's worth (this process held %d MiB)", mib, allocMiB, len(ballast)>>20)
	}
}

func TestReadPeak(t *testing.T) {
	for _, tc := range []struct {
		file string
		want int64 // 0: refused
	}{
		{"70000 9000\n", 70000},
		{"9000 9000\n", 0}, // the starter's own peak: graft's is unknown
		{"8000 9000\n", 0}, // less than it: as unknown
		{"70000\n", 0},     // no starter's figure
		{"lots 9000\n", 0}, // garbage
		{"", 0},
	} {
		file := filepath.Join(t.TempDir(), "peak")
		if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := readPeak(file)
		if tc.want == 0 {
			if err == nil {
				t.Errorf("readPeak(%q) = %d, want an error", tc.file, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("readPeak(%q) = %d, %v; want %d", tc.file, got, err, tc.want)
		}
	}
}
