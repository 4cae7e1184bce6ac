package proc

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// Tail returns the last max bytes of the process's log, saying how much
// it left out and where the full log is.
func (p *Process) Tail(max int64) string {
	return tailFile(p.logPath, max)
}

func tailFile(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	off := st.Size() - max
	prefix := ""
	if off > 0 {
		prefix = fmt.Sprintf("... (%d bytes cut; full log: %s)\n", off, path)
	} else {
		off = 0
	}
	var b bytes.Buffer
	if _, err := io.Copy(&b, io.NewSectionReader(f, off, st.Size()-off)); err != nil {
		return fmt.Sprintf("(log: %v)", err)
	}
	return prefix + b.String()
}
