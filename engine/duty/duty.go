// Package duty is the fleet's one mechanism for "exactly one data node
// does this at a time": a lease per named duty in the broker's key-value
// store (the CREWLET_DUTIES bucket). A node takes a vacant duty with a
// revision-checked create, holds it by revision-checked updates (a
// heartbeat every TTL/4), and runs the duty's function while it holds it.
// The bucket's TTL removes a lease nobody renewed, so a killed holder's
// duty is vacant within one TTL; a holder that stops cleanly, or whose
// node is taken out of service (evicted, faulted, stalled: the node's
// Eligible), deletes its lease at once, so another node takes it on its
// next try — which a watch on the bucket makes immediate. A holder that
// cannot renew for half a TTL stops its function before anyone else can
// take the lease (it fences itself on its own monotonic clock), so two
// nodes never run a duty's function for longer than a renewal apart.
//
// Duties are named in [a-z0-9_-]; a domain's service offers its own
// (Provider) and the node runs them (engine/node). Holders reads every
// lease for the retention answer, /metrics and the dashboard.
package duty

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
)

// Bucket is the key-value bucket the leases live in.
const Bucket = "CREWLET_DUTIES"

// DefaultTTL is how long a lease outlives its holder's last renewal: a
// killed holder's duty is taken over within it (and a renewal).
const DefaultTTL = 10 * time.Second

// keyPrefix prefixes every lease's key.
const keyPrefix = "duty."

var nameRE = regexp.MustCompile(`^[a-z0-9_-]{1,64}$`)

// Job is a duty as a node runs it: its name, and what its holder does.
type Job struct {
	// Name names the duty fleet-wide ("tracker", "embedding").
	Name string
	// Run runs while this node holds the duty and returns when ctx ends
	// (the lease lost or handed over, the node closing); log is the
	// duty's (component duty, the node and the duty named). A Run that
	// returns early is run again, a second later, while the lease holds.
	Run func(ctx context.Context, log *slog.Logger) error
	// Eligible, when set, says why this node may not hold the duty (on
	// top of the node's own standing), nil while it may.
	Eligible func() *engine.Refusal
}

// Provider is a domain service offering duties; the node runs each.
type Provider interface {
	Duties() []Job
}

// Every is a Run that calls fn every interval (first at once) until ctx
// ends; an error is logged and the next tick tries again.
func Every(interval time.Duration, fn func(ctx context.Context, log *slog.Logger) error) func(ctx context.Context, log *slog.Logger) error {
	return func(ctx context.Context, log *slog.Logger) error {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			if err := fn(ctx, log); err != nil && ctx.Err() == nil {
				log.Warn("duty_run_failed", engine.LogErr, err.Error())
			}
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	}
}

// Lease is a lease's value in the bucket.
type Lease struct {
	Holder string    `json:"holder"`
	Since  time.Time `json:"since"`
	Renew  time.Time `json:"renewed_at"`
	// Term is the bucket revision the holder took the lease at: it names
	// one holding, and grows with every hand-over.
	Term uint64 `json:"term"`
}

// Holder is a duty's lease as the bucket holds it now.
type Holder struct {
	Duty string `json:"duty"`
	// Node is the holder, "" while the duty is vacant.
	Node string `json:"node"`
	// Since is when the holder took it; RenewedAt its last renewal (the
	// holder's clock); Term the holding's number.
	Since     *time.Time `json:"since,omitempty"`
	RenewedAt *time.Time `json:"renewed_at,omitempty"`
	Term      uint64     `json:"term,omitempty"`
}

// State is one duty as this node runs it, for its metrics.
type State struct {
	Duty string
	// Held says this node holds it now.
	Held bool
	// Acquired and Lost count the holdings this node took and lost (a
	// renewal refused, or fenced after half a TTL without one) since it
	// started; a clean hand-over is neither lost nor counted here.
	Acquired, Lost uint64
}

// Config builds a node's duties.
type Config struct {
	JS   jetstream.JetStream
	Node string
	// Replicas is the bucket's replica count when it is created.
	Replicas int
	// TTL is the lease's time to live (default DefaultTTL). It is the
	// bucket's, so every node of a fleet runs the same.
	TTL time.Duration
	// Eligible says why this node may not hold any duty (its copy out of
	// service), nil while it may.
	Eligible func() *engine.Refusal
	Clock    engine.Clock
	Logger   *slog.Logger
}

// Duties are one node's duties: the leases it campaigns for and holds.
type Duties struct {
	cfg   Config
	kv    jetstream.KeyValue
	log   *slog.Logger
	renew time.Duration

	mu    sync.Mutex
	jobs  map[string]*campaign
	order []string

	stop   chan struct{}
	wg     sync.WaitGroup
	closed sync.Once
}

// Open creates (or updates) the bucket and starts watching it for leases
// handed over.
func Open(ctx context.Context, cfg Config) (*Duties, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Clock == nil {
		cfg.Clock = engine.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Eligible == nil {
		cfg.Eligible = func() *engine.Refusal { return nil }
	}
	kv, err := cfg.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: Bucket, History: 1, TTL: cfg.TTL,
		Storage: jetstream.FileStorage, Replicas: cfg.Replicas})
	if err != nil {
		return nil, fmt.Errorf("duty: the leases' bucket %s: %w", Bucket, err)
	}
	d := &Duties{cfg: cfg, kv: kv, renew: cfg.TTL / 4, jobs: map[string]*campaign{}, stop: make(chan struct{}),
		log: cfg.Logger.With(engine.LogComponent, ComponentDuty, "node", cfg.Node)}
	d.wg.Add(1)
	go d.watch()
	return d, nil
}

// ComponentDuty is the component of every line this package writes.
const ComponentDuty = "duty"

// Start campaigns for job's duty from now until Close: it runs job.Run
// whenever this node holds the lease. A name already started, or not in
// [a-z0-9_-], is refused.
func (d *Duties) Start(job Job) error {
	if !nameRE.MatchString(job.Name) {
		return engine.Refuse(engine.CodeInvalidArgument, "duty name %q is not 1 to 64 of a-z, 0-9, _ and -.", job.Name)
	}
	if job.Run == nil {
		return engine.Refuse(engine.CodeInvalidArgument, "duty %s has no Run.", job.Name)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.jobs[job.Name]; ok {
		return engine.Refuse(engine.CodeInvalidArgument, "duty %s is started already on this node.", job.Name)
	}
	c := &campaign{d: d, job: job, key: keyPrefix + job.Name, kick: make(chan struct{}, 1), handover: make(chan chan struct{})}
	d.jobs[job.Name] = c
	d.order = append(d.order, job.Name)
	d.wg.Add(1)
	go c.loop()
	return nil
}

// HandOver gives up duty name now where this node holds it: its Run
// ends, the lease is deleted so another node takes it, and this node
// campaigns again only after a TTL. It returns once the lease is gone
// (or was not held).
func (d *Duties) HandOver(ctx context.Context, name string) error {
	d.mu.Lock()
	c := d.jobs[name]
	d.mu.Unlock()
	if c == nil {
		return engine.Refuse(engine.CodeNotFound, "this node runs no duty %q.", name)
	}
	done := make(chan struct{})
	select {
	case c.handover <- done:
	case <-ctx.Done():
		return ctx.Err()
	case <-d.stop:
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Local is every duty this node runs, in the order started.
func (d *Duties) Local() []State {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]State, 0, len(d.order))
	for _, n := range d.order {
		out = append(out, d.jobs[n].state())
	}
	return out
}

// Names are the duties this node runs, in the order started.
func (d *Duties) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.order...)
}

// Holders reads every lease in the bucket, and every duty this node runs
// (vacant where the bucket holds no lease for it), sorted by name.
func (d *Duties) Holders(ctx context.Context) ([]Holder, error) {
	return ReadHolders(ctx, d.kv, d.Names())
}

// ReadHolders reads every lease in kv, with the duties named in also
// listed (vacant where there is no lease), sorted by name.
func ReadHolders(ctx context.Context, kv jetstream.KeyValue, also []string) ([]Holder, error) {
	byName := map[string]Holder{}
	for _, n := range also {
		byName[n] = Holder{Duty: n}
	}
	keys, err := kv.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, fmt.Errorf("duty: list the leases: %w", err)
	}
	for _, k := range keys {
		name, ok := strings.CutPrefix(k, keyPrefix)
		if !ok {
			continue
		}
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			byName[name] = Holder{Duty: name}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("duty: read the lease of %s: %w", name, err)
		}
		byName[name] = holderOf(name, e.Value())
	}
	out := make([]Holder, 0, len(byName))
	for _, h := range byName {
		out = append(out, h)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Duty < out[j].Duty })
	return out, nil
}

func holderOf(name string, v []byte) Holder {
	var l Lease
	if json.Unmarshal(v, &l) != nil || l.Holder == "" {
		return Holder{Duty: name}
	}
	since, renew := l.Since.UTC(), l.Renew.UTC()
	return Holder{Duty: name, Node: l.Holder, Since: &since, RenewedAt: &renew, Term: l.Term}
}

// Close stops every campaign: each Run this node holds ends, and its
// lease is deleted so another node takes the duty at once.
func (d *Duties) Close() {
	if d == nil {
		return
	}
	d.closed.Do(func() {
		close(d.stop)
		d.wg.Wait()
	})
}

// watch wakes every campaign when a lease is deleted (handed over), so a
// vacant duty is taken at once rather than at the next try.
func (d *Duties) watch() {
	defer d.wg.Done()
	for {
		ctx, cancel := context.WithCancel(context.Background())
		w, err := d.kv.Watch(ctx, keyPrefix+"*", jetstream.UpdatesOnly())
		if err == nil {
			d.relay(w)
		}
		cancel()
		select {
		case <-d.stop:
			return
		case <-time.After(d.renew):
		}
	}
}

// relay wakes the campaigns on every deletion w reports until the node
// stops or the watch ends.
func (d *Duties) relay(w jetstream.KeyWatcher) {
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-d.stop:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil || e.Operation() == jetstream.KeyValuePut {
				continue
			}
			d.mu.Lock()
			c := d.jobs[strings.TrimPrefix(e.Key(), keyPrefix)]
			d.mu.Unlock()
			if c != nil {
				c.wake()
			}
		}
	}
}
