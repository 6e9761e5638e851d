package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
)

// FloorBucket is the stream the published trim floors live in, one
// subject per domain. It is beside the positions register rather than
// inside it, so a register reader never meets a key that is not a
// position.
const FloorBucket = "CREWLET_TRIM_FLOORS"

// The terms a floor is held by, in the order they are reported when two
// hold it at the same sequence.
const (
	TermNode   = "node"   // a data node's position: it has applied nothing past it
	TermAge    = "age"    // the records past it are younger than the age floor
	TermBackup = "backup" // no stored snapshot covers anything past it
)

// Floor is one log's published trim floor: the trim has removed (or may
// remove) every record at or below Through, and nothing above it. Term and
// Holder name what stops it advancing now; Terms gives every term's own
// figure as the trimming node last computed them.
type Floor struct {
	Domain     engine.Domain `json:"domain"`
	Stream     string        `json:"stream"`
	Generation uint64        `json:"generation"`
	Through    uint64        `json:"through"`
	Term       string        `json:"term"`
	Holder     string        `json:"holder"`
	Terms      []Term        `json:"terms"`
	// By is the node that trimmed; At when it computed the floor.
	By string    `json:"by"`
	At time.Time `json:"at"`
}

// Term is one retention term's figure: the highest sequence it lets the
// trim remove, and what holds it there (a node's name, a snapshot, an
// age).
type Term struct {
	Term   string `json:"term"`
	Seq    uint64 `json:"seq"`
	Holder string `json:"holder"`
}

// Floors is where the floors are published: a stream of its own, one
// subject per domain keeping its last few floors. It is a stream rather
// than a KV bucket because a KV read may be answered directly by any
// member's copy, which a member cut off from its peers still answers
// from: a floor read here is answered by the stream's leader or not at
// all, so an unreadable floor is never a stale one passed off as read.
type Floors struct {
	js jetstream.JetStream
	s  jetstream.Stream
}

func floorSubject(d engine.Domain) string { return "crewlet.trim.floor." + string(d) }

// OpenFloors opens (or creates) the floors' stream.
func OpenFloors(ctx context.Context, js jetstream.JetStream, replicas int) (*Floors, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := js.Stream(actx, FloorBucket)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			s, err = js.CreateStream(actx, jetstream.StreamConfig{Name: FloorBucket, Subjects: []string{"crewlet.trim.floor.>"},
				MaxMsgsPerSubject: 8, Storage: jetstream.FileStorage, Replicas: replicas, Discard: jetstream.DiscardOld,
				Description: "Crewlet trim floors: each log's published floor and the term that holds it"})
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				s, err = js.Stream(actx, FloorBucket)
			}
		}
		cancel()
		if err == nil {
			return &Floors{js: js, s: s}, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("fleet: open the trim floors %s: %w", FloorBucket, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Read reads one domain's published floor, from the stream's leader: ok
// is false when the trim has published none (it has removed nothing, so
// the floor is zero, which is a known floor, not an unreadable one). An
// error is an unreadable floor, which a node never guesses past. rev is
// what Publish takes to replace it.
func (fs *Floors) Read(ctx context.Context, d engine.Domain) (f Floor, rev uint64, ok bool, err error) {
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	m, err := fs.s.GetLastMsgForSubject(rctx, floorSubject(d))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Floor{Domain: d}, 0, false, nil
	}
	if err != nil {
		return Floor{}, 0, false, err
	}
	if err := json.Unmarshal(m.Data, &f); err != nil {
		return Floor{}, 0, false, fmt.Errorf("trim floor %s: %w", d, err)
	}
	return f, m.Sequence, true, nil
}

// Publish stores f where the stored floor is at rev (0: none yet), so two
// nodes trimming at once cannot move a floor backwards: the loser of the
// race is refused and reads the winner's on its next run.
func (fs *Floors) Publish(ctx context.Context, f Floor, rev uint64) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = fs.js.Publish(pctx, floorSubject(f.Domain), b, jetstream.WithExpectStream(FloorBucket), jetstream.WithExpectLastSequencePerSubject(rev))
	return err
}
