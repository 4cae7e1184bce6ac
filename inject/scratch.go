package inject

import "sync"

// scratch is per-request working memory, pooled. Slices are truncated, not
// freed, so steady-state requests do not allocate.
type scratch struct {
	// budget bounds this request's work (budget.go).
	budget  budget
	rv      review
	pod     pod
	edits   []edit
	inserts []insert
	notices []notice
	refsBuf []int
	// cur is the Pod's graft.dev/status as read and curValue its value,
	// unescaped: a cached entry (recordCache), or rec and statusIn, this
	// scratch's own. curCanonical: graft writes cur, with nothing added,
	// as the bytes the request carries. hasStatus: the Pod has the
	// annotation.
	cur          *record
	curValue     []byte
	curCanonical bool
	rec          record
	statusIn     []byte
	hasStatus    bool
	// statusOut is the status to write, merged from rec and this
	// request's additions (appendRecord), escaped as JSON string content;
	// statusTmp is its value when it must be compared unescaped.
	statusOut, statusTmp []byte
	// skipped and added are indexed by plan template and element ref:
	// templates left out for a conflict, elements this request adds.
	skipped, added []bool
	addedAny       bool
	conflict       conflict
	// out, appRows, slots and order are appendRecord's and the
	// placement check's working lists.
	out     []outEntry
	appRows []appRow
	slots   []slot
	order   []int
	// planKey, shapeKey and podKey build the plan and shape cache keys;
	// recipes are the edits' (writePatch).
	planKey  []byte
	shapeKey []byte
	podKey   []byte
	recipes  []*patchRecipe
	// recent is, per target, the recipe the last edit used (recipe).
	recent [numTargets]recentRecipe
	patch  []byte
	// tokenVolume is the ServiceAccount token volume graft's containers
	// mount, or "" (see tokenVolume). It aliases the request body.
	tokenVolume string
	// resourced, when not nil, holds per element ref the JSON of an
	// injected container with LimitRange defaults added (limitrange.go).
	resourced [][]byte
	// initOwn, ctrOwn and volOwn hold, per init container, container
	// and volume of the Pod, the ref of the plan element it is (graft's)
	// or -1; owned, per element ref, whether the Pod holds it as graft
	// renders it, and ownedAny that the record does not say so yet
	// (own.go). named is per plan template the first object of its names
	// that is not graft's, foreign those of other templates' names,
	// keptObjs all of them, and fields the text of where they differ.
	initOwn, ctrOwn, volOwn []int32
	owned                   []bool
	ownedAny                bool
	named, foreign          []conflict
	keptObjs                []keptObject
	fields                  []byte
	// podAdds is what this request adds to the Pod's pod-level resources,
	// and podResOps how many patch ops that took (podresources.go).
	podAdds   []podAdd
	podResOps int
}

// recentRecipe is a recipe and its shape key, kept for the next edit.
type recentRecipe struct {
	key []byte
	rc  *patchRecipe
}

func (s *scratch) reset() {
	s.budget = budget{}
	s.rv = review{}
	s.pod.reset()
	s.edits = s.edits[:0]
	s.inserts = s.inserts[:0]
	s.notices = s.notices[:0]
	s.refsBuf = s.refsBuf[:0]
	s.rec.reset()
	s.cur, s.curValue, s.curCanonical = nil, nil, false
	s.statusIn, s.statusOut, s.statusTmp = s.statusIn[:0], s.statusOut[:0], s.statusTmp[:0]
	s.hasStatus = false
	s.skipped, s.added, s.addedAny = s.skipped[:0], s.added[:0], false
	s.conflict = conflict{}
	s.out, s.appRows = s.out[:0], s.appRows[:0]
	s.slots, s.order = s.slots[:0], s.order[:0]
	s.planKey = s.planKey[:0]
	s.shapeKey, s.podKey = s.shapeKey[:0], s.podKey[:0]
	clear(s.recipes) // no recipe outlives its cache through a pooled scratch
	s.recipes = s.recipes[:0]
	for i := range s.recent {
		s.recent[i].rc = nil
	}
	s.patch = s.patch[:0]
	s.tokenVolume = ""
	s.resourced = nil
	s.initOwn, s.ctrOwn, s.volOwn = s.initOwn[:0], s.ctrOwn[:0], s.volOwn[:0]
	s.owned, s.ownedAny = s.owned[:0], false
	clear(s.named) // their strings alias the request
	clear(s.foreign)
	clear(s.keptObjs)
	s.named, s.foreign, s.keptObjs, s.fields = s.named[:0], s.foreign[:0], s.keptObjs[:0], s.fields[:0]
	s.podAdds, s.podResOps = s.podAdds[:0], 0
}

// scratchPool keeps scratch between requests: a free list, not a
// sync.Pool. A garbage collection empties a sync.Pool (its objects move to
// a victim cache that the next cycle drops, and the first Put after a
// cycle allocates the per-P slots again), and a sync.Pool keeps its
// latest object in a per-P slot that other Ps cannot take, so a request
// that lands on another P misses too. Either way a fresh scratch regrows
// every slice: measured 41 allocations for the small review, 55 for
// large, 48 for huge, which is where the stray allocations per op in the
// benchmarks came from. This list survives collections and is shared by
// all Ps, so the steady state allocates nothing however often the
// collector runs. It keeps at most maxIdleScratch, each as large as the
// largest Pod it served, for the Engine's lifetime.
type scratchPool struct {
	mu   sync.Mutex
	free []*scratch
}

// maxIdleScratch bounds the free list; more than the engine calls a
// server runs at once (about one per core: they never block).
const maxIdleScratch = 64

func (p *scratchPool) get() *scratch {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		s := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return s
	}
	p.mu.Unlock()
	return new(scratch)
}

func (p *scratchPool) put(s *scratch) {
	s.reset()
	p.mu.Lock()
	if len(p.free) < maxIdleScratch {
		p.free = append(p.free, s)
	}
	p.mu.Unlock()
}
