package inject

import (
	"strings"
	"sync"
)

// recordCache keeps the graft.dev/status values the engine has read, by
// the raw value as requests carry it. The Pods of one workload carry the
// same status, so each value is unescaped and parsed once, and whether
// graft would write it back unchanged is known in advance: an injected
// Pod that needs nothing costs a map look-up. Entries are immutable once
// stored; bounded like the other caches (past the bound a status is read
// per request, into the scratch).
type recordCache struct {
	mu sync.RWMutex
	m  map[string]*readStatus
}

const maxRecords = 1024

// maxCachedStatus bounds the size of a status value the cache keeps, so
// the cache holds at most about maxRecords × 3 × 16 KiB (the value as
// carried, unescaped, and parsed) whatever the Pods carry: a Pod's
// author writes its status. graft's own records stay below it for Pods
// of up to about 40 app containers with every built-in template; a
// larger one is read per request, into the scratch.
const maxCachedStatus = 16 << 10

// readStatus is one status value, read.
type readStatus struct {
	rec record
	// value is the status unescaped; rec's strings view it.
	value []byte
	// canonical: graft writes rec, with nothing added, as the very bytes
	// it was read from.
	canonical bool
}

func (c *recordCache) get(raw string) *readStatus {
	c.mu.RLock()
	rs := c.m[raw]
	c.mu.RUnlock()
	return rs
}

// add stores what the scratch read of raw (s.rec, s.statusIn) as an
// immutable entry, and returns it; nil once the cache is full. It
// allocates: it runs once per distinct status.
func (c *recordCache) add(raw string, s *scratch, plain bool) *readStatus {
	if len(raw) > maxCachedStatus {
		return nil
	}
	c.mu.RLock()
	full := len(c.m) >= maxRecords
	c.mu.RUnlock()
	if full {
		return nil
	}
	rs := &readStatus{value: append([]byte(nil), s.statusIn...)}
	if s.rec.version != 0 {
		// The copy parses as the original did.
		_ = rs.rec.parse(b2s(rs.value), plain)
		var w scratch
		rs.canonical = string(w.appendRecord(nil, &rs.rec, nil, nil)) == raw
	}
	c.mu.Lock()
	if len(c.m) < maxRecords {
		c.m[strings.Clone(raw)] = rs
	}
	c.mu.Unlock()
	return rs
}
