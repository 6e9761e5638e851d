package applytest

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/statelog/statelogtest"
	"github.com/crewlet/crewlet/ledger"
)

// Table is one of the domain's tables as a script prints and compares it.
type Table struct {
	// Name is the table.
	Name string
	// Order makes the order of its rows total (an ORDER BY list).
	Order string
	// Compare is the columns the model compares (every one where empty;
	// an FTS5 table wants "rowid, *").
	Compare string
	// Print is the columns the rows command shows (every one where
	// empty). $T0 in it is the log's first instant in nanoseconds, so an
	// instant prints as seconds since: (at - $T0) / 1000000000.
	Print string
}

// Domain is a domain's apply side as its scripts drive it.
type Domain struct {
	// Domain is the apply side under test.
	Domain statelog.Domain
	// Tables are the domain's tables, printed and held to the model.
	Tables []Table
	// Checks are statements that must succeed on the node's file after
	// every command (an FTS5 table's 'integrity-check', say).
	Checks []string
	// Record is the record one line of an append block names: its kind,
	// subject, declared scope and payload (Make); the runner sets the
	// rest of its envelope.
	Record func(verb string, args Args) (*record.Record, error)
}

// node is the node under test; the models are named model1, model2, ...
const node = "n1"

// start is the log's first instant; each record is appended a second
// after the one before it.
var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// wait bounds every wait of the runner (an applier to commit what it was
// handed): a deadline for a stuck test, never what a script asserts.
const wait = 30 * time.Second

// Run runs the scripts in dir (its *.txt files), each on a log and files
// of its own.
func Run(t *testing.T, dir string, d Domain) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts in %s: %v", dir, err)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			t.Parallel()
			s := newScript(t, d)
			datadriven.RunTest(t, path, s.run)
		})
	}
}

// script is one script's log, its node's file and what the runner
// remembers between commands.
type script struct {
	t      *testing.T
	d      Domain
	dir    string
	stream *statelogtest.Stream
	db     *sql.DB
	// ops names each operation's id by the script's name for it, names
	// the reverse.
	ops   map[string]string
	names map[string]string
	// applied is the node's checkpoint; checked the checkpoint the model
	// last matched.
	applied, checked uint64
	models           int
}

func newScript(t *testing.T, d Domain) *script {
	s := &script{t: t, d: d, dir: scratchDir(t), stream: statelogtest.NewStream(statelogtest.Options{Start: start}),
		ops: map[string]string{}, names: map[string]string{}}
	db, err := sqlite.Open(filepath.Join(s.dir, node+".db"), 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s.db = db
	return s
}

// scratchDir is a script's directory, removed when the test ends. Not
// t.TempDir: database/sql's opener may still run a connection a pool
// asked for after the pool is closed (it opens, then sees the pool closed
// and closes the connection), and SQLite's open creates the file again;
// where that happens while t.TempDir's directory is removed, the removal
// fails the test ("directory not empty", seen once with a model replay's
// database). The removal here tries again.
func scratchDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "applytest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for try := 0; ; try++ {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if try == 50 {
				t.Errorf("removing the script's directory: %v", err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	return dir
}

// run is one command, then the check of the node against the model.
func (s *script) run(t *testing.T, td *datadriven.TestData) string {
	var out strings.Builder
	say := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	if err := s.do(td, say); err != nil {
		say("error: %v", err)
	}
	for _, v := range s.check() {
		t.Errorf("%s: %s", td.Pos, v)
		say("INVARIANT: %s", v)
	}
	return out.String()
}

func (s *script) do(td *datadriven.TestData, say func(string, ...any)) error {
	switch td.Cmd {
	case "append":
		return s.appendAll(td.Input, say)
	case "apply":
		return s.apply(say)
	case "rows":
		return s.rows(Args(td.CmdArgs).Strs("table"), say)
	case "gated":
		return s.gated(say)
	}
	return fmt.Errorf("unknown command %q", td.Cmd)
}

// appendAll appends the records of an append block, one a line.
func (s *script) appendAll(input string, say func(string, ...any)) error {
	sc := bufio.NewScanner(strings.NewReader(input))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		verb, args, err := datadriven.ParseLine(line)
		if err != nil {
			return err
		}
		if err := s.appendOne(verb, Args(args), say); err != nil {
			return fmt.Errorf("%s: %w", line, err)
		}
	}
	return nil
}

// appendOne appends one record, a second after the one before it (a
// second copy of an operation: after the duplicate window, as the ledger
// sees one).
func (s *script) appendOne(verb string, args Args, say func(string, ...any)) error {
	rec, err := s.record(verb, args)
	if err != nil {
		return err
	}
	name, copyOf := s.opName(args)
	if copyOf {
		s.stream.Advance(3 * time.Minute)
	}
	s.stream.Advance(time.Second)
	if rec.OpID, err = s.opID(name); err != nil {
		return err
	}
	if st := args.Strs("step"); len(st) > 0 {
		if rec.OpID, err = s.stepID(st); err != nil {
			return err
		}
	}
	data, err := record.Encode(rec)
	if err != nil {
		return err
	}
	ack, err := s.stream.Log(rec.Writer).Publish(context.Background(), rec.Subject, data, rec.OpID, nil)
	if err != nil {
		return err
	}
	line := fmt.Sprintf("%d %s %s", ack.Seq, rec.Kind, s.short(rec.Subject))
	if rec.Version > 1 {
		line += fmt.Sprintf(" v%d", rec.Version)
	}
	if rec.Writer != node {
		line += " by " + rec.Writer
	}
	if copyOf {
		line += " (a second copy of " + name + ")"
	}
	say("%s", line)
	return nil
}

// record is the record a line names, its envelope filled in.
func (s *script) record(verb string, args Args) (*record.Record, error) {
	var rec *record.Record
	var err error
	switch verb {
	case "evict", "readmit":
		kind := statelog.KindEvict
		if verb == "readmit" {
			kind = statelog.KindReadmit
		}
		rec, err = Make(kind, statelog.NodeGateSubject(s.d.Domain.Name()), nil, map[string]string{"node": args.Str("node")})
	default:
		rec, err = s.d.Record(verb, args)
	}
	if err != nil {
		return nil, err
	}
	if args.Has("kind") {
		rec.Kind = args.Str("kind")
	}
	if args.Has("scope") {
		rec.Scope = args.Strs("scope")
	}
	if args.Has("subject") {
		rec.Subject = statelog.SubjectPrefix(s.d.Domain.Name()) + args.Str("subject")
	}
	v, err := args.Int("v")
	if err != nil {
		return nil, err
	}
	rec.Version = max(rec.Version, int(v), 1)
	rec.Writer, rec.Generation, rec.By = node, 1, "operator"
	if args.Has("writer") {
		rec.Writer = args.Str("writer")
	}
	if args.Has("by") {
		rec.By = args.Str("by")
	}
	if args.Has("digest") {
		rec.Digest = args.Str("digest")
	}
	return rec, nil
}

// opName is the operation a line names (op=NAME), or a fresh one, and
// whether the line brings a named one back.
func (s *script) opName(args Args) (string, bool) {
	if name := args.Str("op"); name != "" {
		_, seen := s.ops[name]
		return name, seen
	}
	return fmt.Sprintf("op%d", len(s.ops)+1), false
}

// opID is the id of the operation named name, made on first use from
// the name alone, so every run names it alike.
func (s *script) opID(name string) (string, error) {
	if id, ok := s.ops[name]; ok {
		return id, nil
	}
	id, err := ledger.Derive("applytest", s.stream.Now(), "script", name, "", 0)
	if err != nil {
		return "", err
	}
	s.ops[name], s.names[id.String()] = id.String(), name
	return id.String(), nil
}

// stepID is the id of step (NAME,VERB,OBJECT) of the gesture named NAME
// (ledger.Step), as a walk derives it.
func (s *script) stepID(step []string) (string, error) {
	if len(step) != 3 {
		return "", fmt.Errorf("step=%v: want step=(NAME,VERB,OBJECT)", step)
	}
	parent, err := s.opID(step[0])
	if err != nil {
		return "", err
	}
	p, err := ledger.Parse(parent)
	if err != nil {
		return "", err
	}
	id, err := ledger.Step(p, step[1], step[2])
	if err != nil {
		return "", err
	}
	s.names[id.String()] = strings.Join(step, "/")
	return id.String(), nil
}

// short is a subject without its domain's prefix.
func (s *script) short(subject string) string {
	return strings.TrimPrefix(subject, statelog.SubjectPrefix(s.d.Domain.Name()))
}

// open opens a replica named name on db, its reader held where held is
// set (nothing is handed over but what Deliver hands).
func (s *script) open(name string, db *sql.DB, held bool) (*statelog.Replica, error) {
	if held {
		s.stream.Hold(name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return statelog.Open(ctx, statelog.Config{Node: name, DB: db, Log: s.stream.Log(name), Domain: s.d.Domain,
		Clock: s.stream, Logger: slog.New(slog.DiscardHandler), Publishing: true})
}

// settle waits until name's applier has committed seq and acknowledged
// everything its reader handed it.
func (s *script) settle(rep *statelog.Replica, name string, seq uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := rep.WaitApplied(ctx, seq); err != nil {
		return fmt.Errorf("%s never applied %d: %w", name, seq, err)
	}
	for !s.stream.Idle(name) {
		if ctx.Err() != nil {
			return fmt.Errorf("%s never acknowledged what it was handed: %+v", name, s.stream.Reader(name))
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}
