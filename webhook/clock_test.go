package webhook

import (
	"sync"
	"sync/atomic"
	"time"
)

// gateClock is a test clock. Armed with hold(n), the next n calls block
// until release: a request is then provably in flight inside the handler.
// With jump set, every call advances time by jump, so any deadline passes.
type gateClock struct {
	mu      sync.Mutex
	now     time.Time
	jump    time.Duration
	holds   int
	entered chan struct{}
	gate    chan struct{}
	panics  atomic.Bool
}

func newGateClock() *gateClock {
	return &gateClock{now: time.Unix(1_800_000_000, 0), entered: make(chan struct{}, 64), gate: make(chan struct{})}
}

func (c *gateClock) Now() time.Time {
	if c.panics.CompareAndSwap(true, false) {
		panic("test clock exploded")
	}
	c.mu.Lock()
	held := c.holds > 0
	if held {
		c.holds--
	}
	gate := c.gate
	c.now = c.now.Add(c.jump)
	now := c.now
	c.mu.Unlock()
	if held {
		c.entered <- struct{}{}
		<-gate
	}
	return now
}

func (c *gateClock) hold(n int) {
	c.mu.Lock()
	c.holds = n
	c.gate = make(chan struct{})
	c.mu.Unlock()
}

func (c *gateClock) release() {
	c.mu.Lock()
	close(c.gate)
	c.mu.Unlock()
}

func (c *gateClock) setJump(d time.Duration) {
	c.mu.Lock()
	c.jump = d
	c.mu.Unlock()
}
