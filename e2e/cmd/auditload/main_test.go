package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// allocArg makes the test binary a child that touches allocMiB of memory,
// writes its own peak RSS (VmHWM, KiB) to the file named by the next
// argument, and exits.
const (
	allocArg = "-alloc-and-exit"
	allocMiB = 64
)

func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == measuredArg:
		os.Exit(runMeasured(os.Args[2:]))
	case len(os.Args) > 2 && os.Args[1] == allocArg:
		touch(allocMiB)
		own, err := vmHWM()
		if err != nil {
			os.Exit(1)
		}
		if err := os.WriteFile(os.Args[2], fmt.Append(nil, own), 0o600); err != nil {
			os.Exit(1)
		}
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
	dir := t.TempDir()
	file, ownFile := filepath.Join(dir, "peak"), filepath.Join(dir, "own")
	if out, err := exec.Command(self, measuredArg, file, self, allocArg, ownFile).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	kib, err := readPeak(file)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ownFile)
	if err != nil {
		t.Fatal(err)
	}
	own, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	parent, err := vmHWM()
	if err != nil {
		t.Fatal(err)
	}
	if own >= parent {
		t.Fatalf("the child's own peak (%d KiB) is not below this process's (%d KiB): the test shows nothing", own, parent)
	}
	// The kernel's two counts of one peak differ by a few pages (the
	// child also touches some after reading its own, on its way out);
	// 4 MiB is slack, against the 256 MiB this process holds.
	if kib < own-4<<10 || kib > own+4<<10 {
		t.Errorf("measured %d KiB, want the child's own peak %d KiB (this process's is %d KiB, holding %d MiB)", kib, own, parent, len(ballast)>>20)
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

// TestPerPod: the per-Pod line compares the smallest and largest fleet,
// and is empty for one size.
func TestPerPod(t *testing.T) {
	r := results{Sizes: []sizeResult{{Pods: 10000, MedianWallS: 1, MedianCPUS: 0.5}}}
	if got := r.perPod(); got != "" {
		t.Errorf("one size: %q, want empty", got)
	}
	r.Sizes = append(r.Sizes, sizeResult{Pods: 100000, MedianWallS: 20, MedianCPUS: 5})
	want := "per Pod, 100000 vs 10000 Pods: median wall 200.0 µs vs 100.0 µs (ratio 2.00), median CPU 50.0 µs vs 50.0 µs (ratio 1.00)"
	if got := r.perPod(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
