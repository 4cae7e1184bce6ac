package cluster

import (
	"fmt"
	"os"
	"sync"
)

// warningLogName is the file, in the run's directory, that the API
// server's warnings to the harness's clients go to.
const warningLogName = "client-warnings.log"

// warningLog is a rest.WarningHandler that appends each warning the API
// server sends to a file: client-go's default prints them to stderr, and
// the suite's Pods draw hundreds ("duplicate port definition"), which
// buried the test output. Tests that assert warnings set their own
// handler.
type warningLog struct {
	path string
	mu   sync.Mutex
	f    *os.File
}

func openWarningLog(path string) (*warningLog, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("warning log: %w", err)
	}
	return &warningLog{path: path, f: f}, nil
}

// HandleWarningHeader implements rest.WarningHandler.
func (w *warningLog) HandleWarningHeader(code int, agent, text string) {
	if w == nil || code != 299 || text == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f != nil {
		fmt.Fprintf(w.f, "%s\n", text)
	}
}

// Close closes the file; later warnings are dropped.
func (w *warningLog) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
