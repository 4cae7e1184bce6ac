package webhook

import (
	"testing"
	"time"
)

func TestDeadline(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	const budget, margin = 200 * time.Millisecond, 100 * time.Millisecond
	cases := []struct {
		timeout string
		want    time.Duration
	}{
		{"", budget},
		{"10s", budget},
		{"30s", budget},
		{"1s", budget},
		{"250ms", 150 * time.Millisecond}, // timeout - margin is sooner
		{"100ms", 50 * time.Millisecond},  // no room for the margin: half
		{"0s", budget},
		{"-5s", budget},
		{"soon", budget},
		{"10", budget},
		{"s", budget},
		{"99999999s", budget},
		{"1.5s", budget},
	}
	for _, tc := range cases {
		if got := deadline(start, budget, margin, []byte(tc.timeout)).Sub(start); got != tc.want {
			t.Errorf("timeout %q: budget %v, want %v", tc.timeout, got, tc.want)
		}
	}
}

func TestParseTimeoutDoesNotAllocate(t *testing.T) {
	b := []byte("10s")
	if n := testing.AllocsPerRun(100, func() { parseTimeout(b) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
