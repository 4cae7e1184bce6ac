package inject

import "time"

// budget bounds one request's work by its deadline (Options.Deadline).
// The steps check it between them (check), and every loop whose length
// the request decides (containers, env lists, the status's app
// containers, the patch's edits) checks it per element (spent), so a
// hostile Pod cannot hold a request past its deadline: the engine stops
// and answers per the profile's failure mode (ReasonBudgetExceeded).
//
// spent reads the clock once every budgetStride calls: per element it
// costs a counter. Once past the deadline the budget stays spent, so the
// loops that follow stop at once.
type budget struct {
	deadline time.Time
	now      func() time.Time
	calls    uint32
	over     bool
}

// budgetStride is how many elements pass between two clock readings. An
// element costs well under a microsecond, so the engine notices a passed
// deadline within a fraction of a millisecond, far inside the margin the
// server leaves (timeoutMargin).
const budgetStride = 256

// start arms the budget for a request; a zero deadline never expires.
func (b *budget) start(deadline time.Time, now func() time.Time) {
	*b = budget{deadline: deadline, now: now}
}

// spent reports whether the deadline has passed, reading the clock on
// every budgetStride-th call.
func (b *budget) spent() bool {
	// Small enough to inline: the loops call it per element.
	b.calls++
	if b.calls%budgetStride != 0 {
		return b.over
	}
	return b.check()
}

// check reads the clock and reports whether the deadline has passed.
func (b *budget) check() bool {
	if !b.over && !b.deadline.IsZero() && !b.now().Before(b.deadline) {
		b.over = true
	}
	return b.over
}
