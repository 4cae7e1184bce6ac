package cluster

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// PodWatch records, for every Pod of a namespace that a load creates, when
// it was first seen and when it was first seen Ready, and what a
// classifier said of it when it appeared (injected or not, say): the
// load tests' view of what controllers create.
type PodWatch struct {
	stop    chan struct{}
	factory informers.SharedInformerFactory
	mark    func(*corev1.Pod) bool

	mu    sync.Mutex
	pods  map[types.UID]*SeenPod
	order []*SeenPod // by first sight
	ready int
}

// SeenPod is what a PodWatch knows of one Pod.
type SeenPod struct {
	Name    string
	Created time.Time // first seen
	Ready   time.Time // first seen Ready; zero until then
	// Marked is what the classifier said of the Pod first seen.
	Marked bool
}

// WatchPods starts watching the Pods of namespace ns and returns once it
// has listed those already there (which it counts too). mark classifies
// each Pod as it first appears. The informer keeps only what it reads of
// a Pod, so a fleet's worth costs little memory.
func WatchPods(ctx context.Context, client kubernetes.Interface, ns string, mark func(*corev1.Pod) bool) (*PodWatch, error) {
	w := &PodWatch{
		stop:    make(chan struct{}),
		factory: informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns), informers.WithTransform(slimPod)),
		mark:    mark,
		pods:    map[types.UID]*SeenPod{},
	}
	inf := w.factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, obj any) { w.observe(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	w.factory.Start(w.stop)
	for typ, ok := range w.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			w.Close()
			return nil, fmt.Errorf("watch pods: %v informer never synced", typ)
		}
	}
	return w, nil
}

func (w *PodWatch) observe(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	s, seen := w.pods[p.UID]
	if !seen {
		s = &SeenPod{Name: p.Name, Created: now, Marked: w.mark(p)}
		w.pods[p.UID] = s
		w.order = append(w.order, s)
	}
	if s.Ready.IsZero() && PodReady(p) {
		s.Ready = now
		w.ready++
	}
}

// Counts is how many Pods have been seen, and how many of them Ready.
func (w *PodWatch) Counts() (created, ready int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.order), w.ready
}

// Seen is a copy of every Pod seen so far, in the order first seen.
func (w *PodWatch) Seen() []SeenPod {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]SeenPod, len(w.order))
	for i, s := range w.order {
		out[i] = *s
	}
	return out
}

// WaitCounts waits until at least created Pods have been seen and ready
// of them Ready, printing progress to log every ten seconds if log is not
// nil.
func (w *PodWatch) WaitCounts(ctx context.Context, created, ready int, log func(created, ready int)) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	last := time.Now()
	for {
		c, r := w.Counts()
		if c >= created && r >= ready {
			return nil
		}
		if log != nil && time.Since(last) >= 10*time.Second {
			log(c, r)
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d Pods created, %d of %d Ready: %w", c, created, r, ready, ctx.Err())
		case <-tick.C:
		}
	}
}

// Close stops the watch.
func (w *PodWatch) Close() {
	close(w.stop)
	w.factory.Shutdown()
}

// slimPod keeps of a Pod what PodReady and a classifier of its init
// containers read: identity, its node, its conditions, its init
// containers' names, and graft's annotations.
func slimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	s := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
		CreationTimestamp: p.CreationTimestamp, Annotations: p.Annotations,
	}}
	s.Spec.NodeName = p.Spec.NodeName
	for _, c := range p.Spec.InitContainers {
		s.Spec.InitContainers = append(s.Spec.InitContainers, corev1.Container{Name: c.Name, Image: c.Image})
	}
	s.Status.Conditions = slices.Clone(p.Status.Conditions)
	return s, nil
}
