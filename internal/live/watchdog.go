package live

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/graftdev/graft/audit"
	"github.com/graftdev/graft/internal/names"
	"github.com/graftdev/graft/rollout"
)

// WatchdogOptions configure graft watchdog.
type WatchdogOptions struct {
	// Grace is how long after its creation a Pod admitted without graft
	// is left before its owner is restarted.
	Grace time.Duration
	// MaxRestartsPerMinute bounds restarts across the cluster.
	MaxRestartsPerMinute int
	// Retry is how soon a Pod whose owner could not be restarted (a
	// budget, graft not injecting, the rate limit) is looked at again.
	Retry time.Duration
	// RolloutTimeout is how long the Pods an owner had when the watchdog
	// restarted it are left to be replaced before it is restarted again.
	RolloutTimeout time.Duration
	Now            func() time.Time
	Log            *zap.Logger
}

// Watchdog restarts the owners of Pods that graft would inject now but
// that were admitted without it, in namespaces labelled
// graft.dev/watchdog=enabled. It watches (informers: one for the labelled
// Namespaces, one for the Pods of each) and works a rate-limited queue
// of Pods; it keeps the Namespaces' and their Pods' objects, and a few
// bytes per owner it restarted.
type Watchdog struct {
	cl       *Cluster
	auditor  *audit.Auditor
	metrics  *rollout.WatchdogMetrics
	o        WatchdogOptions
	queue    workqueue.TypedRateLimitingInterface[string]
	limiter  *rate.Limiter
	recorder record.EventRecorder

	namespaces cache.SharedIndexInformer

	mu        sync.Mutex
	pods      map[string]*podWatch        // by namespace
	restarted map[rollout.Owner]time.Time // when the watchdog restarted each owner
	missing   map[string]bool             // Pods classed missing, by key
	reported  map[string]bool             // Pods told not restartable, by uid
}

// podWatch is the Pod informer of one namespace.
type podWatch struct {
	informer cache.SharedIndexInformer
	stop     chan struct{}
}

// NewWatchdog returns a watchdog classifying with a and counting in m.
func (cl *Cluster) NewWatchdog(a *audit.Auditor, m *rollout.WatchdogMetrics, o WatchdogOptions) *Watchdog {
	w := &Watchdog{cl: cl, auditor: a, metrics: m, o: o,
		pods: map[string]*podWatch{}, restarted: map[rollout.Owner]time.Time{}, missing: map[string]bool{}, reported: map[string]bool{}}
	// Per Pod: back off from 1s to 30s while its owner cannot be
	// restarted. Across the cluster: the restart budget.
	w.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "graft-watchdog"})
	per := max(o.MaxRestartsPerMinute, 1)
	w.limiter = rate.NewLimiter(rate.Limit(float64(per)/60), per)
	return w
}

// Run watches until ctx ends. Only the leader runs it.
func (w *Watchdog) Run(ctx context.Context) error {
	bc := record.NewBroadcaster(record.WithContext(ctx))
	bc.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: w.cl.client.CoreV1().Events("")})
	defer bc.Shutdown()
	w.recorder = bc.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "graft-watchdog"})

	f := informers.NewSharedInformerFactoryWithOptions(w.cl.client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = names.Watchdog + "=" + names.EnabledValue
	}))
	w.namespaces = f.Core().V1().Namespaces().Informer()
	_, err := w.namespaces.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.watchNamespace(obj) },
		UpdateFunc: func(_, obj any) { w.watchNamespace(obj) },
		DeleteFunc: func(obj any) { w.unwatchNamespace(obj) },
	})
	if err != nil {
		return fmt.Errorf("watchdog: %w", err)
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	defer w.queue.ShutDown()
	defer w.stopAll()
	go func() {
		<-ctx.Done()
		w.queue.ShutDown()
	}()
	for w.work(ctx) {
	}
	return nil
}

// watchNamespace starts watching a labelled namespace's Pods, or, when
// it was watched already (its labels changed: graft.dev/inject may have
// been added), looks at each of its Pods again.
func (w *Watchdog) watchNamespace(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if pw, ok := w.pods[ns.Name]; ok {
		for _, key := range pw.informer.GetStore().ListKeys() {
			w.queue.Add(key)
		}
		return
	}
	f := informers.NewSharedInformerFactoryWithOptions(w.cl.client, 0, informers.WithNamespace(ns.Name))
	pw := &podWatch{informer: f.Core().V1().Pods().Informer(), stop: make(chan struct{})}
	_, err := pw.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.enqueue,
		UpdateFunc: func(_, obj any) { w.enqueue(obj) },
		DeleteFunc: w.forget,
	})
	if err != nil {
		w.o.Log.Error("watching pods", zap.String("namespace", ns.Name), zap.Error(err))
		return
	}
	w.pods[ns.Name] = pw
	w.metrics.Namespaces.Set(float64(len(w.pods)))
	f.Start(pw.stop)
	w.o.Log.Info("watching namespace", zap.String("namespace", ns.Name))
}

func (w *Watchdog) unwatchNamespace(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if pw, ok := w.pods[ns.Name]; ok {
		close(pw.stop)
		delete(w.pods, ns.Name)
		for k := range w.missing {
			if strings.HasPrefix(k, ns.Name+"/") {
				delete(w.missing, k)
			}
		}
		w.metrics.Missing.Set(float64(len(w.missing)))
		w.metrics.Namespaces.Set(float64(len(w.pods)))
		w.o.Log.Info("no longer watching namespace", zap.String("namespace", ns.Name))
	}
}

func (w *Watchdog) stopAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ns, pw := range w.pods {
		close(pw.stop)
		delete(w.pods, ns)
	}
}

// enqueue queues a Pod once its grace period is over.
func (w *Watchdog) enqueue(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.DeletionTimestamp != nil {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(p)
	if err != nil {
		return
	}
	w.queue.AddAfter(key, rollout.GraceLeft(p.CreationTimestamp.Time, w.o.Now(), w.o.Grace))
}

func (w *Watchdog) forget(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	w.setMissing(key, false)
}

func (w *Watchdog) setMissing(key string, missing bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if missing {
		w.missing[key] = true
	} else {
		delete(w.missing, key)
	}
	w.metrics.Missing.Set(float64(len(w.missing)))
}

// work handles one queued Pod; false once the queue is shut down.
func (w *Watchdog) work(ctx context.Context) bool {
	key, quit := w.queue.Get()
	if quit {
		return false
	}
	defer w.queue.Done(key)
	retry, err := w.handle(ctx, key)
	switch {
	case err != nil:
		w.o.Log.Warn("pod", zap.String("pod", key), zap.Error(err))
		w.queue.AddRateLimited(key)
	case retry > 0:
		w.queue.Forget(key)
		w.queue.AddAfter(key, retry)
	default:
		w.queue.Forget(key)
	}
	return true
}

// handle decides for one Pod; it returns when to look at it again (0:
// not unless it changes).
func (w *Watchdog) handle(ctx context.Context, key string) (time.Duration, error) {
	nsName, _, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	w.mu.Lock()
	pw := w.pods[nsName]
	w.mu.Unlock()
	nsObj, nsOK, _ := w.namespaces.GetStore().GetByKey(nsName)
	var obj any
	exists := false
	if pw != nil {
		obj, exists, _ = pw.informer.GetStore().GetByKey(key)
	}
	if !exists || !nsOK {
		w.setMissing(key, false)
		return 0, nil
	}
	// Informer objects are shared: classify a copy.
	pod := obj.(*corev1.Pod).DeepCopy()
	if pod.DeletionTimestamp != nil {
		w.setMissing(key, false)
		return 0, nil
	}
	ap, err := auditPod(pod)
	if err != nil {
		return 0, err
	}
	v, err := w.auditor.Classify(auditNamespace(nsObj.(*corev1.Namespace)), ap)
	if err != nil {
		return 0, err
	}
	if !rollout.WatchdogActs(v) {
		w.setMissing(key, false)
		return 0, nil
	}
	w.setMissing(key, true)
	now := w.o.Now()
	if left := rollout.GraceLeft(pod.CreationTimestamp.Time, now, w.o.Grace); left > 0 {
		return left, nil
	}
	owner, why, err := w.owner(ctx, pod)
	if err != nil {
		w.metrics.Errors.WithLabelValues("get-owner").Inc()
		return 0, err
	}
	if why != "" {
		w.notRestartable(pod, why)
		return 0, nil
	}
	w.mu.Lock()
	at, was := w.restarted[owner]
	w.mu.Unlock()
	if was && pod.CreationTimestamp.Time.Before(at) && now.Sub(at) < w.o.RolloutTimeout {
		return w.o.Retry, nil // its restart is replacing it
	}
	own, err := getOwner(ctx, w.cl.client, owner)
	if err != nil {
		w.metrics.Errors.WithLabelValues("get-owner").Inc()
		return 0, err
	}
	if own.onDelete {
		w.notRestartable(pod, fmt.Sprintf("its %s replaces Pods only when they are deleted (updateStrategy OnDelete)", owner.Kind))
		return 0, nil
	}
	bs, err := budgets(ctx, w.cl.client, owner.Namespace)
	if err != nil {
		w.metrics.Errors.WithLabelValues("list-pdbs").Inc()
		return 0, err
	}
	if blocking := rollout.Blocking(bs, own.labels); len(blocking) > 0 {
		w.metrics.Skips.WithLabelValues(rollout.SkipBudget).Inc()
		w.recorder.Eventf(own.obj, corev1.EventTypeWarning, "GraftRestartSkipped",
			"Pod %s was admitted without graft; not restarted: %s", pod.Name, rollout.BlockedMessage(blocking))
		return w.o.Retry, nil
	}
	if ok, err := w.injecting(ctx, owner.Namespace, own.template); !ok {
		w.metrics.Skips.WithLabelValues(rollout.SkipNotInjecting).Inc()
		w.o.Log.Info("graft does not inject yet", zap.String("owner", owner.String()), zap.Error(err))
		return w.o.Retry, nil
	}
	if !w.limiter.Allow() {
		w.metrics.Skips.WithLabelValues(rollout.SkipRateLimited).Inc()
		return w.o.Retry, nil
	}
	if err := restartOwner(ctx, w.cl.client, owner, now, nil); err != nil {
		w.metrics.Errors.WithLabelValues("restart").Inc()
		return 0, err
	}
	w.mu.Lock()
	w.restarted[owner] = now
	w.mu.Unlock()
	w.metrics.Restarts.WithLabelValues(owner.Kind).Inc()
	w.metrics.Latency.Observe(now.Sub(pod.CreationTimestamp.Time).Seconds())
	w.recorder.Eventf(own.obj, corev1.EventTypeNormal, "GraftRestarted",
		"restarted: Pod %s was admitted without graft (%s)", pod.Name, v.Cause)
	w.o.Log.Info("restarted", zap.String("owner", owner.String()), zap.String("pod", pod.Name), zap.String("cause", v.Cause))
	return w.o.Retry, nil
}

// notRestartable says once per Pod, with an Event on it, that its owner
// is not one the watchdog restarts.
func (w *Watchdog) notRestartable(pod *corev1.Pod, why string) {
	w.mu.Lock()
	seen := w.reported[string(pod.UID)]
	w.reported[string(pod.UID)] = true
	w.mu.Unlock()
	if seen {
		return
	}
	w.metrics.Skips.WithLabelValues(rollout.SkipNotRestartable).Inc()
	w.recorder.Eventf(pod, corev1.EventTypeWarning, "GraftNotInjected", "admitted without graft; not restarted: %s", why)
}

// owner is the restartable owner of pod, or why it has none.
func (w *Watchdog) owner(ctx context.Context, pod *corev1.Pod) (rollout.Owner, string, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return rollout.Owner{}, "a bare Pod: recreate it to inject it", nil
	}
	o := rollout.Owner{Namespace: pod.Namespace, Kind: ref.Kind, Name: ref.Name}
	if ref.Kind == "ReplicaSet" {
		rs, err := w.cl.client.AppsV1().ReplicaSets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return o, "", fmt.Errorf("replicaset %s/%s: %w", pod.Namespace, ref.Name, err)
		}
		if d := metav1.GetControllerOf(rs); d != nil && d.Kind == "Deployment" {
			o.Kind, o.Name = d.Kind, d.Name
		}
	}
	if !rollout.Restartable(o.Kind) {
		return o, fmt.Sprintf("owned by %s %s, which graft does not restart", o.Kind, o.Name), nil
	}
	return o, "", nil
}

// injecting reports whether a Pod of template created in ns now would
// come back injected: a dry-run create, through every admission plugin
// and webhook, that stores nothing. Restarting while graft is down (or
// failing open) would only make more Pods without it.
func (w *Watchdog) injecting(ctx context.Context, ns string, tmpl *corev1.PodTemplateSpec) (bool, error) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "graft-watchdog-probe-", Namespace: ns,
		Labels: tmpl.Labels, Annotations: tmpl.Annotations}, Spec: *tmpl.Spec.DeepCopy()}
	got, err := w.cl.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return false, fmt.Errorf("dry-run create: %w", err)
	}
	_, ok := got.Annotations[names.Status]
	return ok, nil
}
