package load

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// progress prints one line a second until stop is closed: on a terminal it
// rewrites the line in place, elsewhere it appends lines.
func progress(w io.Writer, label string, start time.Time, done, errs *atomic.Int64, stop <-chan struct{}, finished chan<- struct{}) {
	defer close(finished)
	tty := isTerminal(w)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last int64
	lastT := start
	line := func(now time.Time) string {
		n := done.Load()
		rate := float64(n-last) / now.Sub(lastT).Seconds()
		last, lastT = n, now
		return fmt.Sprintf("%s %5.1fs %9d req %9.0f req/s %6d errors", label, now.Sub(start).Seconds(), n, rate, errs.Load())
	}
	for {
		select {
		case now := <-tick.C:
			if tty {
				fmt.Fprintf(w, "\r%s\x1b[K", line(now))
			} else {
				fmt.Fprintln(w, line(now))
			}
		case <-stop:
			if tty {
				fmt.Fprintln(w)
			}
			return
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
