package webhook

import "time"

// deadline is when the engine must be done with a request that started at
// start: the configured budget, or the API server's ?timeout= less a
// margin for the network and TLS, whichever is sooner. A timeout too
// short for the margin keeps half of itself.
func deadline(start time.Time, budget, margin time.Duration, timeoutArg []byte) time.Time {
	d := budget
	if t, ok := parseTimeout(timeoutArg); ok {
		left := t - margin
		if left <= 0 {
			left = t / 2
		}
		if left < d {
			d = left
		}
	}
	return start.Add(d)
}

// parseTimeout reads the API server's timeout query value. The API server
// writes a Go duration (timeoutSeconds gives "10s"); whole seconds are
// parsed without allocating, anything else through time.ParseDuration.
// Absent, unparsable or non-positive values are ignored.
func parseTimeout(b []byte) (time.Duration, bool) {
	if len(b) == 0 {
		return 0, false
	}
	if n, ok := wholeSeconds(b); ok {
		return n, n > 0
	}
	d, err := time.ParseDuration(string(b))
	if err != nil || d <= 0 {
		return 0, false
	}
	return d, true
}

func wholeSeconds(b []byte) (time.Duration, bool) {
	if len(b) < 2 || len(b) > 7 || b[len(b)-1] != 's' {
		return 0, false
	}
	var n time.Duration
	for _, c := range b[:len(b)-1] {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + time.Duration(c-'0')
	}
	return n * time.Second, true
}
