package rollout

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"
)

// Progress is told what a run does as it goes. It is safe for concurrent
// use: owners roll out --max-concurrent at a time.
type Progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	// width is the terminal's, in columns (0: unknown): a status line
	// longer than it would wrap, and erasing it would erase its last row
	// only.
	width    int
	now      func() time.Time
	total    int
	finished int
	// active holds the owners under way, with their Pods ready and wanted.
	active map[string]*activeOwner
	order  []string
	drawn  bool
}

type activeOwner struct {
	what        string
	ready, want int
	started     time.Time
}

// NewProgress writes progress to w: on a terminal, one status line
// redrawn in place (owners done / total, the owners under way and their
// Pods ready) under the lines of owners finished; otherwise plain lines,
// one per event, for logs. width is the terminal's in columns (0 if
// unknown); the status line is cut to fit it.
func NewProgress(w io.Writer, terminal bool, width int, now func() time.Time) *Progress {
	return &Progress{w: w, terminal: terminal, width: width, now: now, active: map[string]*activeOwner{}}
}

// Begin starts a run of total owners.
func (p *Progress) Begin(total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total = total
}

// Started says it began item's action (what: "restarting", "upgrading in place").
func (p *Progress) Started(it *Item, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := it.Owner.String()
	p.active[k] = &activeOwner{what: what, started: p.now()}
	p.order = append(p.order, k)
	if !p.terminal {
		fmt.Fprintf(p.w, "[%d/%d] %s: %s\n", p.finished, p.total, k, what)
		return
	}
	p.redraw()
}

// Ready says how many of the owner's Pods are updated and ready.
func (p *Progress) Ready(it *Item, ready, want int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.active[it.Owner.String()]
	if a == nil || a.ready == ready && a.want == want {
		return
	}
	a.ready, a.want = ready, want
	if p.terminal {
		p.redraw()
	}
}

// Finished says how item ended (its State and Message).
func (p *Progress) Finished(it *Item) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := it.Owner.String()
	took := ""
	if a := p.active[k]; a != nil {
		took = " in " + p.now().Sub(a.started).Round(100*time.Millisecond).String()
	}
	delete(p.active, k)
	p.order = slices.DeleteFunc(p.order, func(s string) bool { return s == k })
	p.finished++
	line := fmt.Sprintf("[%d/%d] %s: %s%s", p.finished, p.total, k, it.State, took)
	if it.Message != "" {
		line += ": " + it.Message
	}
	if p.terminal {
		p.clear()
	}
	fmt.Fprintln(p.w, line)
	if p.terminal && len(p.order) > 0 {
		p.redraw()
	}
}

// End clears the status line.
func (p *Progress) End() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		p.clear()
	}
}

// clear erases the status line (carriage return, erase to end of line).
func (p *Progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

func (p *Progress) redraw() {
	p.clear()
	var parts []string
	for _, k := range p.order {
		a := p.active[k]
		s := k + " " + a.what
		if a.want > 0 {
			s += fmt.Sprintf(" (%d/%d Pods ready)", a.ready, a.want)
		}
		parts = append(parts, s)
	}
	line := fmt.Sprintf("[%d/%d done] %s", p.finished, p.total, strings.Join(parts, "; "))
	// One column short of the width: a line filling it leaves some
	// terminals' cursor on the next row.
	if r := []rune(line); p.width > 1 && len(r) > p.width-1 {
		line = string(r[:p.width-2]) + "…"
	}
	fmt.Fprint(p.w, line)
	p.drawn = true
}
