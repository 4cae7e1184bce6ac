package harness

import (
	"bufio"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/graftdev/graft/bench/report"
)

// Describe says what machine this is, for the report.
func Describe(pinned bool) report.Machine {
	m := report.Machine{
		CPU:       "unknown CPU",
		GoVersion: runtime.Version(),
		Date:      time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		Kernel:    "unknown",
		Pinning:   "Servers ran with GOMAXPROCS=1, not pinned; the load generator shared the CPUs with them.",
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			switch k = strings.TrimSpace(k); {
			case !ok:
			case k == "processor":
				m.Cores++
			case k == "model name" && m.CPU == "unknown CPU":
				m.CPU = strings.TrimSpace(v)
			}
		}
		f.Close()
	}
	if pinned {
		m.Pinning = "Servers ran with GOMAXPROCS=1 pinned to CPU 0 (taskset); the load generator ran on CPU " + selfCPUs() +
			". TLS over loopback, HTTP/1.1 keep-alive."
	}
	return m
}

// selfCPUs is this process's CPU affinity as the kernel lists it.
func selfCPUs() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// MachineCPUs counts the machine's CPUs, whatever this process's affinity.
func MachineCPUs() int {
	n := Describe(false).Cores
	if n == 0 {
		n = runtime.NumCPU()
	}
	return n
}
