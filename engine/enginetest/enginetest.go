// Package enginetest holds test helpers over real parts: a node on a
// temporary data directory with its embedded broker and SQLite file, a
// log recorder that captures slog lines, a clock moved by hand, CheckFor,
// the last write on a log (barriers aside) and a wait for a pending write
// to land; and for benchmarks, the bare loops they are held against,
// latency percentiles, the process's CPU time (CPUTime) and the mean time
// writes spent in each phase (WritePhases, ReportWritePhases), and which
// tables and indexes a commit wrote to the WAL (WALPages); and a file's
// tracker_items and tracker_history put back in an older build's layouts
// (OlderItemsLayout, OlderHistoryLayout).
// Tests only.
package enginetest

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
)

// OpenNode opens a node on dir (a fresh temporary one when empty), with
// its logs going to rec when given. The node is closed when the test ends
// unless the test closed it first.
func OpenNode(t testing.TB, cfg node.Config) *node.Node {
	t.Helper()
	if cfg.DataDir == "" {
		cfg.DataDir = t.TempDir()
	}
	if cfg.Name == "" {
		cfg.Name = "n1"
	}
	if cfg.Logger == nil {
		cfg.Logger = Logger()
	}
	n, err := node.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open node: %v", err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

// Logger discards, unless CREWLET_TEST_LOG is set.
func Logger() *slog.Logger {
	if os.Getenv("CREWLET_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// Line is one captured log line.
type Line struct {
	Level   slog.Level
	Message string
	Attrs   map[string]any
}

// Recorder is a slog.Handler that keeps every line.
type Recorder struct {
	mu    *sync.Mutex
	lines *[]Line
	attrs []slog.Attr
}

// NewRecorder returns an empty recorder.
func NewRecorder() *Recorder { return &Recorder{mu: &sync.Mutex{}, lines: &[]Line{}} }

// Logger is a logger writing to the recorder.
func (r *Recorder) Logger() *slog.Logger { return slog.New(r) }

func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	l := Line{Level: rec.Level, Message: rec.Message, Attrs: map[string]any{}}
	for _, a := range r.attrs {
		l.Attrs[a.Key] = a.Value.Any()
	}
	rec.Attrs(func(a slog.Attr) bool { l.Attrs[a.Key] = a.Value.Any(); return true })
	r.mu.Lock()
	*r.lines = append(*r.lines, l)
	r.mu.Unlock()
	return nil
}

func (r *Recorder) WithAttrs(as []slog.Attr) slog.Handler {
	return &Recorder{mu: r.mu, lines: r.lines, attrs: append(append([]slog.Attr{}, r.attrs...), as...)}
}

func (r *Recorder) WithGroup(string) slog.Handler { return r }

// Lines returns the lines whose message is msg.
func (r *Recorder) Lines(msg string) []Line {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Line
	for _, l := range *r.lines {
		if l.Message == msg {
			out = append(out, l)
		}
	}
	return out
}

// CheckFor retries f every interval until it returns nil or total passes.
func CheckFor(t testing.TB, total, interval time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(interval)
	}
	t.Fatalf("not true within %v: %v", total, err)
}

// Clock is a clock the test moves by hand.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock starts a clock at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's instant.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// LastWrite is the sequence of the newest record on d's log that is not a
// barrier: a refusal may append a barrier to establish the log's end, and
// that is not a write.
func LastWrite(t testing.TB, n *node.Node, d engine.Domain) uint64 {
	t.Helper()
	ctx := context.Background()
	log := n.Log(d)
	info, err := log.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	barrier := statelog.BarrierSubject(d)
	for seq := info.LastSeq; seq >= max(info.FirstSeq, 1); seq-- {
		msg, err := log.Get(ctx, seq)
		if err != nil {
			t.Fatalf("read %s at %d: %v", d, seq, err)
		}
		if msg.Subject != barrier {
			return seq
		}
	}
	return 0
}

// Retried makes a write again while it is refused behind — the refusal
// the seeds say to wait out ("it clears on its own"), which a loaded
// machine produces when a write's decision waits for this node's own last
// write longer than the read budget — sleeping the refusal's hint between
// attempts, for up to the two minutes Landed waits. Any other answer is
// returned as it is.
func Retried(write func() (engine.WriteResult, error)) (engine.WriteResult, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		w, err := write()
		ref, ok := engine.AsRefusal(err)
		if !ok || ref.Code != engine.CodeBehind || time.Now().After(deadline) {
			return w, err
		}
		time.Sleep(max(time.Duration(ref.RetryAfter*float64(time.Second)), 100*time.Millisecond))
	}
}

// Landed waits for a write that answered pending to be applied on n, so a
// test that needs its rows asserts what the seeds promise (durable, applied
// later) rather than what a quiet machine does (applied within the write
// wait). It fails the test on an error or an unknown outcome.
func Landed(t testing.TB, n *node.Node, d engine.Domain, w engine.WriteResult, err error) {
	t.Helper()
	if err != nil || (w.Outcome != engine.Applied && w.Outcome != engine.Pending) {
		t.Fatalf("write: %+v %v", w, err)
	}
	if w.Outcome == engine.Applied {
		return
	}
	p, err := engine.ParsePosition(w.Position)
	if err != nil {
		t.Fatalf("pending write without a position: %+v", w)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := n.Replica(d).WaitApplied(ctx, p.Seq); err != nil {
		t.Fatalf("pending write at %s never applied: %v", w.Position, err)
	}
}
